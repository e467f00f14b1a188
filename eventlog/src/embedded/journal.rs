//! The embedded log's journal: append-only segment files in front of the redb file.
//!
//! An append is copied into the current segment, a file of fixed size mapped into memory
//! (shared with the kernel's page cache: no system call), and acknowledged then (or, with
//! [`LogAck::Synced`], once `msync` has put it on the disk): what the kernel holds survives
//! the process being killed. The flusher moves journaled events into redb in large durable
//! transactions and deletes the segments redb then holds entirely; opening the log moves
//! what a stopped process left in the journal into redb first.
//!
//! A segment is named after the offset of its first event (`00000000000000001234.seg`),
//! allocated on the disk whole when it is made ([`SEGMENT_BYTES`], or an append's size if
//! larger: a full disk fails there, never under a write into the mapping), and holds
//! frames: the length of the body (u32, little-endian), its CRC-32 (u32), then the body:
//! partition (u32), offset (u64), the packed event. A frame's header is copied after its
//! body, so a frame with a length is whole unless the machine lost power; zeros after the
//! last frame are the segment's unwritten rest. The partition's top bit ([`CONTINUES`]) is
//! set on every event of an append but its last, so that an append is recovered whole or
//! not at all. A torn frame can only end the last segment: an append cut short by the
//! process being killed in the middle of it, or by a power loss. It, anything after it and
//! the rest of its append were never acknowledged and are dropped.

use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fs4::fs_std::FileExt;
use memmap2::{MmapMut, MmapOptions};

use crate::LogError;

/// The journal's directory inside the data directory.
pub const JOURNAL_DIR: &str = "log.journal";

/// A segment's size: a new one is begun when an append does not fit in the current one.
/// Small enough that the mapped pages of the one being written (which count in the
/// process's resident memory) stay few, large enough that segments are begun rarely (a
/// few times a second under 20,000 recordViews a second).
const SEGMENT_BYTES: u64 = 1024 * 1024;

const HEADER: usize = 8;
const BODY_HEADER: usize = 12;

/// Set in a frame's partition on every event of an append but its last (a partition
/// number is far below it). Frames written before it existed have it clear: each is an
/// append of its own, as they were recovered then.
const CONTINUES: u32 = 1 << 31;

/// When the embedded log acknowledges an append.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogAck {
    /// Once it is copied into the journal (the kernel's page cache): the event survives the
    /// process being killed at any moment, and a power loss once the flusher's next redb
    /// commit (milliseconds later) or the kernel's writeback reaches the disk. Kafka's
    /// default, without replicas.
    #[default]
    Written,
    /// Once the journal's copy is on the disk (`msync` of its pages, one per append,
    /// which the query nodes share between concurrent procedures): survives a power loss
    /// too.
    Synced,
}

/// One journaled event: where it lives in the log and its packed bytes.
#[derive(Clone)]
pub(crate) struct Entry {
    pub partition: u32,
    pub offset: u64,
    pub bytes: Arc<[u8]>,
}

/// The writer's side of the journal: the segments on disk, the last one open for appends.
pub(crate) struct Journal {
    dir: PathBuf,
    ack: LogAck,
    /// The segments in order, by the offset of their first event; the last is `map`'s.
    segments: VecDeque<(u64, PathBuf)>,
    /// The last segment, mapped.
    map: MmapMut,
    /// The bytes of it the frames written fill.
    len: usize,
}

impl Journal {
    /// Starts an empty journal in `dir` whose first event will have `next_offset`, deleting
    /// the segments of an earlier one (call it once redb durably holds what [`recover`]
    /// returned).
    pub fn create(dir: &Path, next_offset: u64, ack: LogAck) -> Result<Journal, LogError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        for (_, path) in segments(dir)? {
            std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
        }
        let path = segment_path(dir, next_offset);
        let map = create_segment(dir, &path, SEGMENT_BYTES)?;
        Ok(Journal { dir: dir.to_path_buf(), ack, segments: VecDeque::from([(next_offset, path)]), map, len: 0 })
    }

    /// Appends `entries` (in offset order), beginning a new segment first when they do not
    /// fit in the current one. On an error nothing of them stays in the journal.
    pub fn write(&mut self, entries: &[Entry]) -> Result<(), LogError> {
        let Some(first) = entries.first() else { return Ok(()) };
        let size: usize = entries.iter().map(|e| HEADER + BODY_HEADER + e.bytes.len()).sum();
        if self.len + size > self.map.len() {
            let path = segment_path(&self.dir, first.offset);
            if self.len == 0 {
                // Too small even empty: made again, larger, under the same name.
                self.segments.pop_back();
                std::fs::remove_file(&path).map_err(|e| io_error(&path, e))?;
            }
            self.map = create_segment(&self.dir, &path, SEGMENT_BYTES.max(size as u64))?;
            self.segments.push_back((first.offset, path));
            self.len = 0;
        }
        let start = self.len;
        let mut at = start;
        for (i, entry) in entries.iter().enumerate() {
            let body_len = BODY_HEADER + entry.bytes.len();
            let partition = if i + 1 < entries.len() { entry.partition | CONTINUES } else { entry.partition };
            let body = &mut self.map[at + HEADER..at + HEADER + body_len];
            body[..4].copy_from_slice(&partition.to_le_bytes());
            body[4..12].copy_from_slice(&entry.offset.to_le_bytes());
            body[12..].copy_from_slice(&entry.bytes);
            let crc = crc32fast::hash(body);
            // The header last: a frame with a length has its body.
            self.map[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
            self.map[at..at + 4].copy_from_slice(&(body_len as u32).to_le_bytes());
            at += HEADER + body_len;
        }
        if self.ack == LogAck::Synced {
            if let Err(e) = self.map.flush_range(start, size) {
                // Not acknowledged: the next append is written over it.
                self.map[start..start + size].fill(0);
                return Err(io_error(self.current(), e));
            }
        }
        self.len += size;
        Ok(())
    }

    /// Forgets the segments whose every event is before `flushed` (redb holds them
    /// durably) and returns their paths, for the caller to delete outside its lock.
    pub fn release(&mut self, flushed: u64) -> Vec<PathBuf> {
        let mut done = Vec::new();
        while self.segments.len() > 1 && self.segments[1].0 <= flushed {
            done.extend(self.segments.pop_front().map(|(_, path)| path));
        }
        done
    }

    /// Deletes every segment: the log file holds all they did (a clean close).
    pub fn remove(self) {
        for (_, path) in self.segments {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!(error = %e, path = %path.display(), "failed to delete a journal segment the log file holds");
            }
        }
    }

    fn current(&self) -> &Path {
        self.segments.back().map_or(self.dir.as_path(), |(_, path)| path.as_path())
    }
}

/// Every whole event the journal in `dir` holds, in offset order (none when there is no
/// journal). Reads only: a torn end is skipped, not cut off.
///
/// # Errors
/// [`LogError::Io`] when a segment cannot be read; [`LogError::Unavailable`] when a frame
/// before the last segment's end is damaged (the journal cannot be trusted past it).
pub(crate) fn recover(dir: &Path) -> Result<Vec<Entry>, LogError> {
    let segments = match segments(dir) {
        Ok(segments) => segments,
        Err(_) if !dir.exists() => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut entries: Vec<Entry> = Vec::new();
    let count = segments.len();
    for (i, (_, path)) in segments.into_iter().enumerate() {
        let mut bytes = Vec::new();
        match File::open(&path).and_then(|mut f| f.read_to_end(&mut bytes)) {
            Ok(_) => {}
            // The writer deleted it since it was listed: redb holds its events.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io_error(&path, e)),
        }
        let mut at = 0;
        // Where the append being read began in `entries`, while its last event is not read.
        let mut open_append: Option<usize> = None;
        while at < bytes.len() {
            if unwritten(&bytes[at..]) {
                // The rest of the segment was never written to.
                break;
            }
            match frame(&bytes[at..]) {
                Some((mut entry, len)) => {
                    if entries.last().is_some_and(|last| last.offset >= entry.offset) {
                        return Err(LogError::Unavailable(format!("{}: offsets out of order at byte {at}", path.display())));
                    }
                    let continues = entry.partition & CONTINUES != 0;
                    entry.partition &= !CONTINUES;
                    if continues {
                        open_append.get_or_insert(entries.len());
                    } else {
                        open_append = None;
                    }
                    entries.push(entry);
                    at += len;
                }
                None if i + 1 == count => break,
                None => {
                    return Err(LogError::Unavailable(format!(
                    "{}: damaged frame at byte {at} of a segment that is not the last (move the journal aside to open the log without it)",
                    path.display()
                )))
                }
            }
        }
        // An append whose last event is not here was cut short: none of it was acknowledged.
        if let Some(begun) = open_append {
            entries.truncate(begun);
        }
    }
    Ok(entries)
}

/// Whether `bytes`, the rest of a segment after a frame, is the segment's unwritten part:
/// zeros to its end (a frame's header always holds its length).
fn unwritten(bytes: &[u8]) -> bool {
    bytes.iter().all(|b| *b == 0)
}

/// The frame at the start of `bytes` and its length, if it is whole and intact.
fn frame(bytes: &[u8]) -> Option<(Entry, usize)> {
    let body_len = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(bytes.get(4..8)?.try_into().ok()?);
    let body = bytes.get(HEADER..HEADER + body_len)?;
    if body_len < BODY_HEADER || crc32fast::hash(body) != crc {
        return None;
    }
    let partition = u32::from_le_bytes(body[..4].try_into().ok()?);
    let offset = u64::from_le_bytes(body[4..12].try_into().ok()?);
    Some((Entry { partition, offset, bytes: Arc::from(&body[BODY_HEADER..]) }, HEADER + body_len))
}

/// The segments in `dir`, by the offset of their first event.
fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>, LogError> {
    let mut found = Vec::new();
    for item in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let path = item.map_err(|e| io_error(dir, e))?.path();
        let first = path.extension().filter(|ext| *ext == "seg").and(path.file_stem()).and_then(|s| s.to_str()?.parse().ok());
        if let Some(first) = first {
            found.push((first, path));
        }
    }
    found.sort();
    Ok(found)
}

fn segment_path(dir: &Path, first: u64) -> PathBuf {
    dir.join(format!("{first:020}.seg"))
}

/// Creates a segment of `size` bytes, allocated on the disk (a full disk fails here), makes
/// its name durable (the directory synced) and maps it.
fn create_segment(dir: &Path, path: &Path, size: u64) -> Result<MmapMut, LogError> {
    let file = OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path).map_err(|e| io_error(path, e))?;
    match file.allocate(size) {
        Ok(()) => {}
        // A file system without allocation: the file is made as long, its blocks taken
        // when written.
        Err(e) if e.kind() == io::ErrorKind::Unsupported || e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            file.set_len(size).map_err(|e| io_error(path, e))?
        }
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return Err(io_error(path, e));
        }
    }
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io_error(dir, e))?;
    // SAFETY: the file is this journal's own, made just now; nothing else writes to it or
    // shortens it while it is mapped (the log's directory is locked by this process).
    unsafe { MmapOptions::new().len(size as usize).map_mut(&file) }.map_err(|e| io_error(path, e))
}

fn io_error(path: &Path, e: io::Error) -> LogError {
    LogError::Io(format!("{e} ({})", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(offset: u64) -> Entry {
        Entry { partition: (offset % 3) as u32, offset, bytes: Arc::from(format!("event {offset}").into_bytes()) }
    }

    #[test]
    fn what_was_written_is_recovered_and_a_torn_end_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), 5, LogAck::Written).unwrap();
        journal.write(&[entry(5), entry(6)]).unwrap();
        journal.write(&[entry(7)]).unwrap();
        let segment = segment_path(dir.path(), 5);
        // A write cut short: half a frame after the last.
        let mut torn = std::fs::read(&segment).unwrap();
        let end = journal.len;
        torn.copy_within(..10, end);
        std::fs::write(&segment, &torn).unwrap();
        let got = recover(dir.path()).unwrap();
        assert_eq!(got.iter().map(|e| e.offset).collect::<Vec<_>>(), [5, 6, 7]);
        assert_eq!(&*got[2].bytes, b"event 7");
        assert_eq!(got[1].partition, 0);
    }

    #[test]
    fn an_append_cut_short_is_dropped_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), 5, LogAck::Written).unwrap();
        journal.write(&[entry(5), entry(6)]).unwrap();
        let segment = segment_path(dir.path(), 5);
        let before = journal.len;
        journal.write(&[entry(7), entry(8), entry(9)]).unwrap();
        let whole = std::fs::read(&segment).unwrap();
        assert_eq!(whole.len() as u64, SEGMENT_BYTES, "a segment is made whole");
        // Killed in the middle of the second append, at each byte in turn (the rest of the
        // segment zeros, as it was made): whichever of its frames are whole, none is kept.
        for cut in before..journal.len {
            let mut killed = whole.clone();
            killed[cut..journal.len].fill(0);
            std::fs::write(&segment, &killed).unwrap();
            let got: Vec<u64> = recover(dir.path()).unwrap().iter().map(|e| e.offset).collect();
            assert_eq!(got, [5, 6], "cut at byte {cut} of {}", whole.len());
        }
        std::fs::write(&segment, &whole).unwrap();
        let got = recover(dir.path()).unwrap();
        assert_eq!(got.iter().map(|e| (e.offset, e.partition)).collect::<Vec<_>>(), [(5, 2), (6, 0), (7, 1), (8, 2), (9, 0)]);
    }

    #[test]
    fn an_append_that_does_not_fit_begins_a_segment_and_one_larger_than_a_segment_gets_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), 0, LogAck::Synced).unwrap();
        journal.write(&[entry(0)]).unwrap();
        // Nearly full: the next append begins a segment, leaving this one's rest unwritten.
        journal.len = journal.map.len() - 20;
        let big = |offset: u64| Entry { partition: 1, offset, bytes: Arc::from(vec![7u8; SEGMENT_BYTES as usize + 10]) };
        journal.write(&[entry(1)]).unwrap();
        journal.write(&[big(2), entry(3)]).unwrap();
        journal.write(&[entry(4)]).unwrap();
        let lengths: Vec<u64> = segments(dir.path()).unwrap().iter().map(|(_, p)| std::fs::metadata(p).unwrap().len()).collect();
        assert_eq!(lengths.len(), 4, "{lengths:?}");
        assert!(lengths[2] > SEGMENT_BYTES, "the large append's segment fits it: {lengths:?}");
        drop(journal);
        // The first segment's bytes after its first frame were skipped by the test, not
        // written: zeros, which end it.
        let got = recover(dir.path()).unwrap();
        assert_eq!(got.iter().map(|e| e.offset).collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
        assert_eq!(got[2].bytes.len(), SEGMENT_BYTES as usize + 10);
    }

    #[test]
    fn a_damaged_frame_inside_the_journal_refuses_to_open() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), 0, LogAck::Synced).unwrap();
        journal.write(&[entry(0), entry(1)]).unwrap();
        let written = journal.len;
        journal.len = journal.map.len();
        journal.write(&[entry(2)]).unwrap();
        let first = segment_path(dir.path(), 0);
        let mut bytes = std::fs::read(&first).unwrap();
        bytes[written - 1] ^= 0xff;
        std::fs::write(&first, &bytes).unwrap();
        assert!(matches!(recover(dir.path()), Err(LogError::Unavailable(why)) if why.contains("damaged frame")));
    }

    #[test]
    fn segments_are_released_once_flushed_and_a_new_journal_starts_empty() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::create(dir.path(), 0, LogAck::Written).unwrap();
        journal.write(&[entry(0)]).unwrap();
        journal.len = journal.map.len();
        journal.write(&[entry(1)]).unwrap();
        journal.len = journal.map.len();
        journal.write(&[entry(2)]).unwrap();
        assert!(journal.release(0).is_empty(), "redb holds nothing yet");
        assert_eq!(journal.release(2), [segment_path(dir.path(), 0), segment_path(dir.path(), 1)]);
        assert!(journal.release(3).is_empty(), "the segment being written stays");
        drop(journal);
        assert_eq!(recover(dir.path()).unwrap().len(), 3, "release only forgets: the caller deletes");
        Journal::create(dir.path(), 3, LogAck::Written).unwrap();
        assert!(recover(dir.path()).unwrap().is_empty());
    }
}
