//! Work groups: processes that share the partitions of the log between them.
//!
//! Workers of one group (say, every `svc project` process) each [`EventLog::join_group`] and
//! read only the partitions the group assigns them. When a member joins, leaves or dies, the
//! partitions are assigned again and the survivors take over. A log that only one process can
//! open (the embedded log) assigns every partition to its one member.
//!
//! A member may still be applying a batch of a partition that was just taken from it while
//! the new owner starts on it: the projections' writes are idempotent by log position, so the
//! overlap rewrites the same rows and never loses or doubles anything.
//!
//! [`EventLog::join_group`]: crate::EventLog::join_group

use std::collections::BTreeSet;

use tokio::sync::watch;

/// The partitions one member of a group owns, kept up to date while it is a member.
pub struct GroupMember {
    assigned: watch::Receiver<BTreeSet<u32>>,
    /// Keeps the membership alive; dropping it leaves the group.
    _membership: Option<Box<dyn Send + Sync>>,
}

impl GroupMember {
    /// A member that owns `partitions` for good (logs without groups).
    pub fn fixed(partitions: impl IntoIterator<Item = u32>) -> GroupMember {
        let (tx, assigned) = watch::channel(partitions.into_iter().collect());
        // The sender lives inside the member so the receiver never reports it closed.
        GroupMember { assigned, _membership: Some(Box::new(tx)) }
    }

    /// A member whose partitions `assigned` reports, in the group while `membership` lives.
    pub fn new(assigned: watch::Receiver<BTreeSet<u32>>, membership: Box<dyn Send + Sync>) -> GroupMember {
        GroupMember { assigned, _membership: Some(membership) }
    }

    /// The partitions owned now.
    pub fn partitions(&self) -> BTreeSet<u32> {
        self.assigned.borrow().clone()
    }

    /// A receiver that changes whenever the owned partitions change.
    pub fn changes(&self) -> watch::Receiver<BTreeSet<u32>> {
        self.assigned.clone()
    }
}

impl std::fmt::Debug for GroupMember {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupMember").field("partitions", &*self.assigned.borrow()).finish()
    }
}
