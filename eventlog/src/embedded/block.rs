//! Rows of the events table that hold several events of one partition, compressed together.
//!
//! One event a row, each packed alone with the built-in dictionary, left the log at about
//! what one event alone can be compressed to; consecutive events of a partition share much
//! more (the same accounts, the same collections, the words of neighbouring abstracts), and
//! zstd finds it when they are compressed together. A block's row is keyed by its **last**
//! event's `(partition, offset)`, so the row a read from offset `o` starts at is the first
//! row at or after `(partition, o)`, whether it holds one event or a block.
//!
//! A block row: [`MARK`]; the number of events `n` (≥ 2); the first event's offset and the
//! `n - 1` gaps to the next ones (LEB128 varints, uncompressed, so events are counted
//! without decompressing them); then, packed ([`packed::pack`]), the `n` events' lengths
//! (varints) and the events as encoded, one after another. A row of one event starts with
//! a CBOR map or [`packed`]'s mark, never with [`MARK`]; a build from before blocks reads
//! a block as a corrupt event and says so, rather than skipping it.

use event_schema::packed;

/// The first byte of a block row.
pub(super) const MARK: u8 = 2;

/// The most bytes a block's row should take: it then fills one 16 KiB page of the file's
/// B-tree (a leaf of one entry: a few bytes of header, the key, the value). A row a little
/// larger takes a page of twice the size, half of it empty (the first blocks, of about 20
/// KB, left 41 of the log's 109 MB unused). The blocks hold 50 KB of events or so as
/// encoded: enough for zstd to find what they share, little to decompress for one event
/// (docs/capacity.md, "The log's events compressed in blocks").
pub(super) const ROW_BYTES: usize = 16 * 1024 - 64;

/// Whether a row of the events table is a block.
pub(super) fn is_block(stored: &[u8]) -> bool {
    stored.first() == Some(&MARK)
}

/// The row of the events `(offset, encoded)`, in offset order, two or more, compressed by
/// `pack` ([`packed::pack`], or [`packed::pack_small`] offline).
pub(super) fn encode(events: &[(u64, &[u8])], pack: fn(Vec<u8>, usize) -> Vec<u8>) -> Vec<u8> {
    debug_assert!(events.len() >= 2 && events.windows(2).all(|w| w[0].0 < w[1].0));
    let mut row = vec![MARK];
    push_varint(&mut row, events.len() as u64);
    let mut previous = None;
    for (offset, _) in events {
        push_varint(&mut row, previous.map_or(*offset, |p| offset - p));
        previous = Some(*offset);
    }
    let mut body = Vec::with_capacity(events.iter().map(|(_, e)| e.len() + 3).sum());
    for (_, event) in events {
        push_varint(&mut body, event.len() as u64);
    }
    for (_, event) in events {
        body.extend_from_slice(event);
    }
    row.extend(pack(body, 0));
    row
}

/// The offsets of a block's events, read from its header alone.
///
/// # Errors
/// The reason, when the header is damaged.
pub(super) fn offsets(row: &[u8]) -> Result<Vec<u64>, String> {
    Ok(header(row)?.0)
}

/// A block's events, `(offset, encoded)`, in offset order.
///
/// # Errors
/// The reason, when the row is damaged.
pub(super) fn decode(row: &[u8]) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let (offsets, at) = header(row)?;
    let body = packed::unpack(&row[at..])?;
    let mut cursor = Cursor { bytes: &body, at: 0 };
    let lengths = offsets.iter().map(|_| cursor.varint()).collect::<Result<Vec<u64>, String>>()?;
    let mut out = Vec::with_capacity(offsets.len());
    for (offset, length) in offsets.into_iter().zip(lengths) {
        let end = usize::try_from(length).ok().and_then(|l| cursor.at.checked_add(l)).filter(|end| *end <= body.len());
        let end = end.ok_or("a block's event runs past its end")?;
        out.push((offset, body[cursor.at..end].to_vec()));
        cursor.at = end;
    }
    if cursor.at != body.len() {
        return Err("a block holds bytes after its last event".into());
    }
    Ok(out)
}

/// The offsets a block's header lists and where its body starts.
fn header(row: &[u8]) -> Result<(Vec<u64>, usize), String> {
    let mut cursor = Cursor { bytes: row, at: 0 };
    if cursor.byte()? != MARK {
        return Err("not a block".into());
    }
    let n = cursor.varint()?;
    if n < 2 || n > row.len() as u64 {
        return Err(format!("a block of {n} events"));
    }
    let mut offsets = Vec::with_capacity(n as usize);
    let mut offset = cursor.varint()?;
    offsets.push(offset);
    for _ in 1..n {
        let gap = cursor.varint()?;
        offset = offset.checked_add(gap).filter(|_| gap > 0).ok_or("a block's offsets do not ascend")?;
        offsets.push(offset);
    }
    Ok((offsets, cursor.at))
}

fn push_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.bytes.get(self.at).ok_or("a block ends early")?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            n |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err("a block's number runs past 64 bits".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_gives_back_its_events_and_their_offsets() {
        let events: Vec<(u64, Vec<u8>)> = [3u64, 4, 200, 70_000, 70_001]
            .iter()
            .map(|o| (*o, format!("\u{a2}an event at {o} that repeats words of the others ").repeat(5).into_bytes()))
            .collect();
        let borrowed: Vec<(u64, &[u8])> = events.iter().map(|(o, e)| (*o, e.as_slice())).collect();
        let row = encode(&borrowed, packed::pack);
        assert_eq!(decode(&encode(&borrowed, packed::pack_small)).unwrap(), events);
        assert!(is_block(&row));
        assert!(row.len() < events.iter().map(|(_, e)| e.len()).sum::<usize>() / 3, "compressed together: {}", row.len());
        assert_eq!(offsets(&row).unwrap(), vec![3, 4, 200, 70_000, 70_001]);
        assert_eq!(decode(&row).unwrap(), events);
    }

    #[test]
    fn a_damaged_block_is_an_error_not_a_panic() {
        let events = [(1u64, b"\xa1abc".as_slice()), (2, b"\xa1defg".as_slice())];
        let row = encode(&events, packed::pack);
        for cut in 0..row.len() {
            assert!(decode(&row[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode(&[MARK, 1, 0]).is_err(), "one event is no block");
        assert!(decode(&[MARK, 2, 5, 0]).is_err(), "offsets that do not ascend");
        assert!(decode(&[MARK, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]).is_err());
    }
}
