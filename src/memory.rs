//! Handing memory back to the operating system after bulk work.

use tracing::info;

/// Returns the memory the allocator holds freed (after a catch-up: batches, staging maps,
/// index writer buffers) to the operating system, and logs the resident set before and
/// after. mimalloc keeps freed pages for reuse; a long-running node that caught up from
/// zero would otherwise keep the peak of the catch-up resident while it serves.
///
/// mimalloc keeps pages per thread and collects only the calling thread's (a block another
/// thread frees only marks its page): each of `threads` (the projection workers', which did
/// the catch-up's work) collects its own, then the calling thread.
pub fn release_free_memory(threads: &[projections::WorkerThreads]) {
    let before = resident_mb();
    // SAFETY: `mi_collect` only walks mimalloc's own heaps; it takes no pointers and is
    // safe to call from any thread at any time.
    let collect = || unsafe { libmimalloc_sys::mi_collect(true) };
    for pool in threads {
        pool.run_on_each(collect);
    }
    collect();
    info!(resident_mb_before = before, resident_mb_after = resident_mb(), "released the memory the catch-up used");
}

/// The resident set in MB (Linux; None elsewhere).
fn resident_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let kb: u64 = status.lines().find_map(|l| l.strip_prefix("VmRSS:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb / 1024)
}
