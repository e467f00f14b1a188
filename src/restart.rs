//! Restarting a serving process in place after a large first catch-up.
//!
//! A catch-up of millions of events churns through gigabytes of address space. Freed, it
//! goes back to the operating system, but jemalloc keeps the records of every extent it was
//! cut into and pages left partly used, for the life of the process: a node that caught up
//! holds about twice the memory of the same node restarted (docs/performance.md). So after
//! such a catch-up `svc up` and `svc serve` stop as on a shutdown and replace themselves
//! with a fresh image of the same binary (`execve`: same PID, arguments and environment).
//! The listening socket is handed over open, so connections made meanwhile wait in its
//! backlog and are answered by the new image; none is refused.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;

use anyhow::Context as _;

/// The environment variable naming the listening socket a restarted process inherits.
const LISTEN_FD: &str = "SVC_LISTEN_FD";
/// Set in a restarted process's environment: the events of the catch-up it restarted after.
const RESTARTED: &str = "SVC_RESTARTED_AFTER_CATCH_UP_OF";

/// How a serving role ended.
pub enum Stopped {
    /// Shut down (a signal) or failed: the process exits.
    Done,
    /// Asked to restart in place after a catch-up (of this many events), with its listening
    /// socket to hand over (none if the API did not listen yet).
    Restart(Option<OwnedFd>, u64),
}

/// Whether this process is the fresh image of a restart (which never restarts again).
pub fn is_restarted() -> bool {
    std::env::var_os(RESTARTED).is_some()
}

/// Logs that this process is the fresh image of a restart, if it is one.
pub fn announce() {
    if let Some(events) = std::env::var_os(RESTARTED) {
        tracing::info!(events = %events.to_string_lossy(), "restarted in place after the catch-up");
    }
}

/// The listening socket this process inherited from the image before it, if it is a
/// restarted one.
pub fn inherited_listener() -> anyhow::Result<Option<std::net::TcpListener>> {
    if !is_restarted() {
        return Ok(None);
    }
    let Some(fd) = std::env::var(LISTEN_FD).ok() else { return Ok(None) };
    let fd: i32 = fd.parse().with_context(|| format!("{LISTEN_FD} is not a file descriptor: {fd}"))?;
    // SAFETY: the image before this one left `fd` open for this process, as its listening
    // socket, and nothing else in this process has taken it.
    let listener = unsafe { std::net::TcpListener::from_raw_fd(fd) };
    listener.local_addr().with_context(|| format!("the inherited file descriptor {fd} is not a listening socket"))?;
    listener.set_nonblocking(true)?;
    Ok(Some(listener))
}

/// Replaces this process with a fresh image of its binary, run with the same arguments,
/// handing `listener` over. Returns only if that fails.
pub fn exec(listener: Option<OwnedFd>, caught_up: u64) -> anyhow::Error {
    let mut args = std::env::args_os();
    let mut command = std::process::Command::new("/proc/self/exe");
    if let Some(name) = args.next() {
        command.arg0(name);
    }
    command.args(args).env(RESTARTED, caught_up.to_string()).env_remove(LISTEN_FD);
    if let Some(listener) = &listener {
        let fd = listener.as_raw_fd();
        // SAFETY: `fd` is open (owned by `listener`); clearing FD_CLOEXEC keeps it open
        // across the exec, which is the point.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, 0) } != 0 {
            return anyhow::anyhow!("failed to keep the listening socket open for the restart: {}", std::io::Error::last_os_error());
        }
        command.env(LISTEN_FD, fd.to_string());
    }
    let error = command.exec();
    anyhow::anyhow!("failed to restart svc after the catch-up: {error}")
}
