//! Text appended in short pieces: the run's recorded text, one delta at a time.
//!
//! A `String::push_str` of a 1-8 byte delta is a call to libc's `memcpy`,
//! most of what recording a delta cost (`benches/RESULTS.md`, issue 23). Here
//! a piece of up to 16 bytes is copied inline, as two overlapping fixed-size
//! copies, into a buffer kept initialized past its end (safe code only).
//! Those copies branch on the piece's length, which varies at random: a piece
//! read back from the frame it was just written to (`push_ending`) is one
//! 16-byte word shifted into place instead, with no such branch.

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

    // Inlined into the paths that record a delta as they send it.
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

    /// Appends the last `n` bytes of `bytes`, a piece of whole UTF-8
    /// characters written after at least `SHORT - n` others (a frame's
    /// delta, after its prefix): the 16 bytes ending the piece are read as
    /// one word and shifted down to it, with no branch on its length.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn push_ending(&mut self, bytes: &[u8], n: usize) {
        let end = bytes.len();
        // One comparison for both an empty piece and a long one.
        if n.wrapping_sub(1) >= SHORT || end < SHORT || self.len + SHORT > self.buf.len() {
            self.push_long(&bytes[end - n..]);
            return;
        }
        let mut word = [0; SHORT];
        word.copy_from_slice(&bytes[end - SHORT..]);
        let piece = u128::from_le_bytes(word) >> ((SHORT - n) * 8);
        self.buf[self.len..self.len + SHORT].copy_from_slice(&piece.to_le_bytes());
        self.len += n;
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

    /// Pieces of 0 to 13 characters of 1 to 4 bytes each, differing by round.
    fn piece(round: usize, n: usize) -> String {
        "aé東🎉"
            .chars()
            .cycle()
            .skip(round + n)
            .take(n / 3)
            .collect()
    }

    #[test]
    fn pieces_of_every_length_make_the_same_text_as_a_string() {
        let mut appended = Appended::default();
        let mut expected = String::new();
        let mut bounds = vec![0];
        for round in 0..40 {
            for n in 0..=40 {
                let piece = piece(round, n);
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

    #[test]
    fn pieces_read_from_the_end_of_a_frame_make_the_same_text_as_a_string() {
        let mut appended = Appended::default();
        let mut expected = String::new();
        for round in 0..40 {
            for n in 0..=40 {
                let piece = piece(round, n);
                // What precedes the piece: a frame's prefix, or (short) nothing much.
                let before = "data: {\"delta\":\"".repeat(round % 3).into_bytes();
                let mut frame = before.clone();
                frame.extend_from_slice(piece.as_bytes());
                // Alternating with `push_str`: each path leaves the other's text intact.
                if (round + n) % 2 == 0 {
                    appended.push_ending(&frame, piece.len());
                } else {
                    appended.push_str(&piece);
                }
                expected.push_str(&piece);
                assert_eq!(appended.get(0, appended.len()), expected);
            }
        }
    }
}
