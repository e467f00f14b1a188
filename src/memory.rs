//! The allocator, and handing memory back to the operating system after bulk work.

use std::ffi::{c_char, CStr};

use tracing::info;

/// jemalloc's options, compiled in (`_RJEM_MALLOC_CONF` in the environment adds to them):
/// a background thread purges freed pages (not the next allocation on some thread), and
/// purged pages are returned at once (`MADV_DONTNEED`), not left resident until the kernel
/// is short of memory (`MADV_FREE`), so the resident set is what svc holds.
#[repr(transparent)]
pub struct MallocConf(*const c_char);

// SAFETY: the pointer is to a static C string, never written.
unsafe impl Sync for MallocConf {}

#[unsafe(export_name = "_rjem_malloc_conf")]
#[used]
static MALLOC_CONF: MallocConf = MallocConf(c"background_thread:true,muzzy_decay_ms:0".as_ptr());

/// Returns the memory the allocator holds freed (after a catch-up: batches, staging maps,
/// index writer buffers) to the operating system, and logs the resident set before and
/// after. A long-running node that caught up from zero would otherwise keep the peak of the
/// catch-up resident while it serves until the allocator's decay (seconds) returns it.
///
/// Each thread keeps a small cache of freed blocks that only it can flush: each of
/// `threads` (the projection workers', which did the catch-up's work) flushes its own, then
/// every arena's free pages are purged.
pub fn release_free_memory(threads: &[projections::WorkerThreads]) {
    let before = resident_mb();
    for pool in threads {
        pool.run_on_each(|| mallctl(c"thread.tcache.flush"));
    }
    mallctl(c"thread.tcache.flush");
    // 4096 is `MALLCTL_ARENAS_ALL`: every arena.
    mallctl(c"arena.4096.purge");
    info!(resident_mb_before = before, resident_mb_after = resident_mb(), "released the memory the catch-up used");
}

/// Binds each of `threads` (a projection worker's) to one arena of their own, created once:
/// the garbage of a catch-up stays off the pages the serving threads allocate from, so what
/// they keep (answers, cached rows) is not scattered among the catch-up's freed pages.
pub fn dedicate_arena(threads: &projections::WorkerThreads) {
    static ARENA: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    let arena = *ARENA.get_or_init(|| {
        let mut index: u32 = 0;
        let mut len = std::mem::size_of::<u32>();
        // SAFETY: `arenas.create` writes the new arena's index, a `u32`, to `index`.
        let rc =
            unsafe { tikv_jemalloc_sys::mallctl(c"arenas.create".as_ptr(), (&raw mut index).cast(), &mut len, std::ptr::null_mut(), 0) };
        (rc == 0).then_some(index)
    });
    let Some(arena) = arena else { return };
    threads.run_on_each(|| {
        let mut index = arena;
        // SAFETY: `thread.arena` reads the arena's index, a `u32`, for the calling thread.
        unsafe {
            tikv_jemalloc_sys::mallctl(
                c"thread.arena".as_ptr(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                (&raw mut index).cast(),
                std::mem::size_of::<u32>(),
            )
        };
    });
}

/// Sets the allocator's gauges of `/metrics` (`svc_allocator_bytes`, by `stat`:
/// `allocated`, the bytes svc's live allocations hold; `active`, the pages holding them;
/// `metadata`, jemalloc's own; `resident`, its pages in memory; `mapped` and `retained`,
/// address space in use and kept for reuse). Beside the resident set and the caches'
/// gauges (`svc_memory_resident_bytes`, `svc_cache_bytes`), they tell a cache filling from
/// a leak, and both from the allocator's overhead.
pub fn record_gauges() {
    // The statistics are a snapshot taken when the epoch advances.
    if tikv_jemalloc_ctl::epoch::advance().is_err() {
        return;
    }
    use tikv_jemalloc_ctl::stats;
    type Read = fn() -> tikv_jemalloc_ctl::Result<usize>;
    let reads: [(&str, Read); 6] = [
        ("allocated", stats::allocated::read),
        ("active", stats::active::read),
        ("metadata", stats::metadata::read),
        ("resident", stats::resident::read),
        ("mapped", stats::mapped::read),
        ("retained", stats::retained::read),
    ];
    for (stat, read) in reads {
        if let Ok(bytes) = read() {
            metrics::gauge!("svc_allocator_bytes", "stat" => stat).set(bytes as f64);
        }
    }
}

/// Runs a jemalloc control that reads and writes nothing (a command).
fn mallctl(name: &CStr) {
    // SAFETY: `name` is a C string naming a command, which takes no old or new value.
    let rc = unsafe { tikv_jemalloc_sys::mallctl(name.as_ptr(), std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), 0) };
    if rc != 0 {
        tracing::warn!(control = ?name, rc, "the allocator refused a control");
    }
}

/// The resident set in MB (Linux; None elsewhere).
fn resident_mb() -> Option<u64> {
    query_api::process::ProcessStatus::read().resident_bytes().map(|b| b / (1024 * 1024))
}
