//! The roles an account can be granted.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A role the contract names that can be granted (`anonymous` is no grant). `admin` holds
/// every other role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Everything, including the admin surface.
    Admin,
    /// Moderation.
    Moderator,
    /// Edits the knowledge graph.
    GraphEditor,
    /// Publishes eprints.
    Author,
    /// Reads (what every account is without a grant).
    Reader,
    /// Tries features in alpha.
    AlphaTester,
    /// A higher rate-limit tier.
    Premium,
}

impl Role {
    /// Every role, most senior first (the order a 403 names `your_role` in).
    pub const ALL: [Role; 7] =
        [Role::Admin, Role::Moderator, Role::GraphEditor, Role::Author, Role::Premium, Role::AlphaTester, Role::Reader];

    /// The role's name in the contract, e.g. `graph-editor`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Moderator => "moderator",
            Role::GraphEditor => "graph-editor",
            Role::Author => "author",
            Role::Reader => "reader",
            Role::AlphaTester => "alpha-tester",
            Role::Premium => "premium",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is no role.
#[derive(Debug, thiserror::Error)]
#[error("{0:?} is not one of {roles}", roles = Role::ALL.map(Role::as_str).join(", "))]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Role, UnknownRole> {
        Role::ALL.into_iter().find(|r| r.as_str() == s).ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for role in Role::ALL {
            assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
            assert_eq!(serde_json::to_value(role).unwrap(), role.as_str());
        }
        assert!("anonymous".parse::<Role>().is_err());
    }
}
