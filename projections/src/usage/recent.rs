//! The uses of an eprint in the last 30 s, for COUNTER's double-click rule, kept packed in a
//! row as text: 17 bytes a use (the viewer's 64-bit hash, the kind of use, its time in µs),
//! base64. A busy eprint holds hundreds of them, so their form is what a view costs.

use data_encoding::BASE64_NOPAD;

use super::sketch::viewer_hash;
use super::DOUBLE_CLICK_MICROS;

const USE_BYTES: usize = 17;

/// The kinds of use the rule tells apart (a download from a search result is a download).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    View = 0,
    Download = 1,
    SearchClick = 2,
}

/// The uses of the last 30 s, oldest first.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Recent(Vec<(u64, u8, i64)>);

impl Recent {
    /// The uses held in `text`; none when absent or unreadable.
    pub(crate) fn from_text(text: Option<&str>) -> Recent {
        let bytes = text.and_then(|t| BASE64_NOPAD.decode(t.as_bytes()).ok()).unwrap_or_default();
        Recent(
            bytes
                .chunks_exact(USE_BYTES)
                .map(|u| {
                    let viewer = u64::from_be_bytes(u[..8].try_into().expect("8 bytes"));
                    let at = i64::from_be_bytes(u[9..].try_into().expect("8 bytes"));
                    (viewer, u[8], at)
                })
                .collect(),
        )
    }

    /// The uses as text.
    pub(crate) fn to_text(&self) -> String {
        let mut bytes = Vec::with_capacity(self.0.len() * USE_BYTES);
        for (viewer, kind, at) in &self.0 {
            bytes.extend_from_slice(&viewer.to_be_bytes());
            bytes.push(*kind);
            bytes.extend_from_slice(&at.to_be_bytes());
        }
        BASE64_NOPAD.encode(&bytes)
    }

    /// Records a use by `viewer` at `at` (µs, never before the last use): whether it is a
    /// double click, the same viewer's same kind of use within 30 s of their last.
    pub(crate) fn double_click(&mut self, viewer: &str, kind: Kind, at: i64) -> bool {
        let (viewer, kind) = (viewer_hash(viewer), kind as u8);
        self.0.retain(|u| at - u.2 < DOUBLE_CLICK_MICROS);
        let before = self.0.len();
        self.0.retain(|u| !(u.0 == viewer && u.1 == kind));
        let double = self.0.len() < before;
        self.0.push((viewer, kind, at));
        double
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_use_within_30_s_of_the_same_viewers_last_is_a_double_click_and_uses_survive_text() {
        let (a, b) = ("0123456789abcdef0000", "fedcba98765432100000");
        let mut r = Recent::default();
        assert!(!r.double_click(a, Kind::View, 0));
        assert!(!r.double_click(b, Kind::View, 1_000_000));
        assert!(!r.double_click(a, Kind::Download, 2_000_000));
        let mut r = Recent::from_text(Some(&r.to_text()));
        assert!(r.double_click(a, Kind::View, 29_000_000));
        // A run of clicks counts once: each restarts the 30 s.
        assert!(r.double_click(a, Kind::View, 58_000_000));
        assert!(!r.double_click(a, Kind::View, 88_000_001));
        // b's use is gone: only the last 30 s are kept.
        assert_eq!(r.0.len(), 1);
        assert_eq!(Recent::from_text(Some("not base64!")), Recent::default());
    }
}
