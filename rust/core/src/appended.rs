//! Text appended in short pieces: the run's recorded text, one delta at a time.
//!
//! A `String::push_str` of a 1-8 byte delta is a call to libc's `memcpy`,
//! most of what recording a delta cost (`benches/RESULTS.md`, issue 23). Here
//! a piece of up to 16 bytes is copied inline, as two overlapping fixed-size
//! copies, into a buffer kept initialized past its end (safe code only).

/// Valid UTF-8: the concatenation of the `&str` pieces appended.
#[derive(Debug, Clone, Default)]
pub struct Appended {
    /// Initialized to its full length; the text is `buf[..len]`.
    buf: Vec<u8>,
    len: usize,
}

/// The longest piece copied inline.
const SHORT: usize = 16;

impl Appended {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes held (what is kept for the next run).
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    pub fn clear(&mut self) {
        self.len = 0;
    }

    // Inlined into the fast paths' loops (`Dialect::fast_text`).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn push_str(&mut self, piece: &str) {
        let src = piece.as_bytes();
        let n = src.len();
        let end = self.len + n;
        if n > SHORT || end > self.buf.len() {
            self.push_long(src);
            return;
        }
        let dst = &mut self.buf[self.len..end];
        if n >= 8 {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        } else if n >= 4 {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        } else if n > 0 {
            dst[0] = src[0];
            dst[n / 2] = src[n / 2];
            dst[n - 1] = src[n - 1];
        }
        self.len = end;
    }

    #[cold]
    #[inline(never)]
    fn push_long(&mut self, src: &[u8]) {
        let end = self.len + src.len();
        if end > self.buf.len() {
            self.buf.resize(end.max(2 * self.buf.len()).max(256), 0);
        }
        self.buf[self.len..end].copy_from_slice(src);
        self.len = end;
    }

    /// The text from `start` to `end` (both at piece boundaries).
    pub fn get(&self, start: usize, end: usize) -> &str {
        // Pieces are whole `&str`s, so a range between two boundaries is valid UTF-8.
        std::str::from_utf8(&self.buf[start..end]).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::Appended;

    #[test]
    fn pieces_of_every_length_make_the_same_text_as_a_string() {
        let mut appended = Appended::default();
        let mut expected = String::new();
        let mut bounds = vec![0];
        for round in 0..40 {
            for n in 0..=40 {
                let piece: String = "aé東🎉"
                    .chars()
                    .cycle()
                    .skip(round + n)
                    .take(n / 3)
                    .collect();
                appended.push_str(&piece);
                expected.push_str(&piece);
                bounds.push(expected.len());
            }
        }
        assert_eq!(appended.len(), expected.len());
        assert_eq!(appended.get(0, appended.len()), expected);
        for pair in bounds.windows(2) {
            assert_eq!(appended.get(pair[0], pair[1]), &expected[pair[0]..pair[1]]);
        }
        appended.clear();
        assert!(appended.is_empty());
        appended.push_str("ok");
        assert_eq!(appended.get(0, 2), "ok");
    }
}
