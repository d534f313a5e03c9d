//! SSE frames (contract section 2): `data: <compact JSON>\n\n`, and the
//! event ids of section 7 (`id: {n}\n` before `data:`), numbered here only.

use crate::framing::Event;
use crate::json::{self, Map, Value};

pub const KEEPALIVE: &[u8] = b": ping\n\n";

/// The numbering of a run's events (contract section 7): `first` for the
/// first event emitted, +1 for each later one, whatever method emitted it.
/// Counted whether or not the frames carry the ids, so a caller can always
/// tell which n an event has.
#[derive(Debug, Clone, Copy)]
pub struct EventIds {
    on: bool,
    next: u64,
    /// With ids on, the next event's line, kept in step with `next`: most
    /// events only add one to its last digit (a line per event on the fastest
    /// paths, where making the digits showed in profiles).
    line: IdLine,
}

impl Default for EventIds {
    fn default() -> Self {
        Self::new(false, 1)
    }
}

impl EventIds {
    pub fn new(on: bool, first: u64) -> Self {
        Self {
            on,
            next: first,
            line: IdLine::new(if on { first } else { 0 }),
        }
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The id the next event emitted gets.
    pub fn next(&self) -> u64 {
        self.next
    }

    /// Numbers `count` events that leave as dicts (which carry no id).
    pub fn skip(&mut self, count: usize) {
        match count {
            0 => {}
            1 => self.advance(), // `__call__`'s, per delta: the line only added to
            _ => {
                self.next += count as u64;
                if self.on {
                    self.line = IdLine::new(self.next);
                }
            }
        }
    }

    /// Numbers one event that leaves as a frame: its `id:` line when ids are on.
    #[inline]
    pub fn take(&mut self) -> Option<IdLine> {
        let line = self.on.then_some(self.line);
        self.advance();
        line
    }

    /// `take`, the line appended to `out`.
    #[inline]
    pub fn write_next(&mut self, out: &mut Vec<u8>) {
        if self.on {
            out.extend_from_slice(&self.line);
        }
        self.advance();
    }

    #[inline]
    fn advance(&mut self) {
        self.next += 1;
        if self.on {
            self.line.add_one();
        }
    }

    /// Writes `events` as frames, each numbered.
    pub fn write_frames(&mut self, out: &mut Vec<u8>, events: &[Event]) {
        if !self.on {
            self.skip(events.len());
            return write_frames(out, events);
        }
        for event in events {
            self.write_next(out);
            write_frame(out, event);
        }
    }
}

/// "00", "01", … "99": an id's digits are made two at a time (a line per
/// event on the fastest paths, where a digit at a time showed in profiles).
const DIGIT_PAIRS: [u8; 200] = {
    let mut pairs = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        pairs[2 * i] = b'0' + (i / 10) as u8;
        pairs[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    pairs
};

/// `id: {n}\n`, built on the stack.
#[derive(Debug, Clone, Copy)]
pub struct IdLine {
    bytes: [u8; 25], // "id: ", at most 20 digits, "\n"
    start: usize,
}

impl IdLine {
    fn new(mut n: u64) -> Self {
        let mut bytes = [0u8; 25];
        let mut at = bytes.len() - 1;
        bytes[at] = b'\n';
        while n >= 100 {
            let pair = (n % 100) as usize * 2;
            n /= 100;
            at -= 2;
            bytes[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        }
        if n >= 10 {
            let pair = n as usize * 2;
            at -= 2;
            bytes[at..at + 2].copy_from_slice(&DIGIT_PAIRS[pair..pair + 2]);
        } else {
            at -= 1;
            bytes[at] = b'0' + n as u8;
        }
        at -= 4;
        bytes[at..at + 4].copy_from_slice(b"id: ");
        Self { bytes, start: at }
    }

    /// The line of the next number: the last digit up by one, carried left.
    #[inline]
    fn add_one(&mut self) {
        let mut at = self.bytes.len() - 2;
        loop {
            let digit = self.bytes[at];
            if digit == b' ' {
                // Every digit was a 9: one more digit, the prefix a place left.
                self.bytes[at] = b'1';
                self.start -= 1;
                self.bytes[self.start..self.start + 4].copy_from_slice(b"id: ");
                return;
            }
            if digit != b'9' {
                self.bytes[at] = digit + 1;
                return;
            }
            self.bytes[at] = b'0';
            at -= 1;
        }
    }
}

impl std::ops::Deref for IdLine {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[self.start..]
    }
}

pub fn write_frame(out: &mut Vec<u8>, event: &Event) {
    out.extend_from_slice(b"data: {\"type\":");
    json::write_plain(out, event.kind);
    for (key, value) in &event.fields {
        out.push(b',');
        json::write_plain(out, key);
        out.push(b':');
        json::write_value(out, value);
    }
    out.extend_from_slice(b"}\n\n");
}

/// A frame for an event the caller built, as a JSON object.
pub fn write_map_frame(out: &mut Vec<u8>, event: &Map<String, Value>) {
    out.extend_from_slice(b"data: ");
    json::write_map(out, event);
    out.extend_from_slice(b"\n\n");
}

pub fn write_frames(out: &mut Vec<u8>, events: &[Event]) {
    for event in events {
        write_frame(out, event);
    }
}

pub fn frames(events: &[Event]) -> Vec<u8> {
    let mut out = Vec::with_capacity(128 * events.len());
    write_frames(&mut out, events);
    out
}

/// The exact length of the content frame for `delta` after `prefix`.
pub fn content_frame_len(prefix: &[u8], delta: &str) -> usize {
    prefix.len() + json::escaped_len(delta) + CONTENT_END.len()
}

const CONTENT_END: &[u8] = b"}\n\n";

/// Fills `buffer` (of exactly `head.len() + content_frame_len(prefix, delta)`
/// bytes) with `head` (an `id:` line or nothing) and the content frame of a
/// delta that needs no escaping.
pub fn fill_content_frame(buffer: &mut [u8], head: &[u8], prefix: &[u8], delta: &str) {
    let (id, rest) = buffer.split_at_mut(head.len());
    id.copy_from_slice(head);
    let (start, rest) = rest.split_at_mut(prefix.len());
    start.copy_from_slice(prefix);
    let (quoted, tail) = rest.split_at_mut(delta.len() + 2);
    quoted[0] = b'"';
    quoted[1..=delta.len()].copy_from_slice(delta.as_bytes());
    quoted[delta.len() + 1] = b'"';
    tail.copy_from_slice(CONTENT_END);
}

/// Writes a `TEXT_MESSAGE_CONTENT` frame from the open message's precomputed prefix.
///
/// Where the delta ends in `out` when it is there as it is (nothing to escape).
pub fn write_content_frame(out: &mut Vec<u8>, prefix: &[u8], delta: &str) -> Option<usize> {
    if json::needs_escape(delta) {
        out.extend_from_slice(prefix);
        json::write_str(out, delta);
        out.extend_from_slice(CONTENT_END);
        return None;
    }
    // The common case, a few plain characters: one reservation, three copies.
    out.reserve(prefix.len() + delta.len() + 2 + CONTENT_END.len());
    out.extend_from_slice(prefix);
    out.push(b'"');
    out.extend_from_slice(delta.as_bytes());
    let end = out.len();
    out.extend_from_slice(b"\"}\n\n");
    Some(end)
}

/// Writes a `TOOL_CALL_ARGS` frame for an open call.
pub fn write_tool_args_frame(out: &mut Vec<u8>, tool_call_id: &str, delta: &str) {
    out.extend_from_slice(br#"data: {"type":"TOOL_CALL_ARGS","toolCallId":"#);
    json::write_str(out, tool_call_id);
    out.extend_from_slice(br#","delta":"#);
    json::write_str(out, delta);
    out.extend_from_slice(CONTENT_END);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framing::{Framer, event};
    use crate::json::Map;

    #[test]
    fn content_frame_matches_the_general_writer() {
        let mut framer = Framer::new("t".into(), "r\"1".into(), Map::new(), false);
        framer.start(None, None);
        framer.text("a");
        let general = frames(&framer.take_out()[2..]);
        let mut fast = Vec::new();
        write_content_frame(&mut fast, &framer.content_prefix, "a");
        assert_eq!(fast, general);
        assert_eq!(content_frame_len(&framer.content_prefix, "a"), fast.len());
        framer.text("a\u{1}\"");
        let general = frames(&framer.take_out());
        let mut fast = Vec::new();
        write_content_frame(&mut fast, &framer.content_prefix, "a\u{1}\"");
        assert_eq!(fast, general);
    }

    #[test]
    fn tool_args_frame_matches_the_general_writer() {
        let mut framer = Framer::new("t".into(), "r".into(), Map::new(), false);
        framer.start(None, None);
        assert!(framer.tool_start("c\"1", "f"));
        framer.tool_args("c\"1", "{\"a\n");
        let general = frames(&framer.take_out()[2..]);
        let mut fast = Vec::new();
        write_tool_args_frame(&mut fast, "c\"1", "{\"a\n");
        assert_eq!(fast, general);
    }

    #[test]
    fn id_lines_and_numbered_frames() {
        for n in [
            0,
            1,
            9,
            10,
            99,
            100,
            101,
            999,
            1000,
            12_345,
            100_000,
            u64::MAX,
        ] {
            assert_eq!(&*IdLine::new(n), format!("id: {n}\n").as_bytes());
        }
        let mut ids = EventIds::new(true, 9);
        let mut out = Vec::new();
        ids.write_frames(&mut out, &[event("A"), event("B")]);
        assert_eq!(
            out,
            b"id: 9\ndata: {\"type\":\"A\"}\n\nid: 10\ndata: {\"type\":\"B\"}\n\n"
        );
        let mut counting = EventIds::new(true, 0);
        let mut lines = Vec::new();
        let mut expected = Vec::new();
        for n in 0..1_200u64 {
            if n == 1_000 {
                counting.skip(98_765);
            }
            if n % 7 == 0 {
                counting.skip(1); // `__call__`'s delta: numbered, no line written
            }
            let n = counting.next();
            counting.write_next(&mut lines);
            expected.extend_from_slice(format!("id: {n}\n").as_bytes());
        }
        assert_eq!(lines, expected);
        let mut last = EventIds::new(true, u64::MAX - 10);
        for _ in 0..9 {
            last.write_next(&mut Vec::new());
        }
        assert_eq!(
            &*last.take().unwrap(),
            format!("id: {}\n", u64::MAX - 1).as_bytes()
        );
        let mut off = EventIds::new(false, 9);
        let mut none = Vec::new();
        off.write_next(&mut none);
        assert!(none.is_empty());
        off.skip(2);
        assert_eq!(off.next(), 12);
    }

    #[test]
    fn one_frame() {
        let mut out = Vec::new();
        write_frame(&mut out, &event("RUN_STARTED"));
        assert_eq!(out, b"data: {\"type\":\"RUN_STARTED\"}\n\n");
    }
}
