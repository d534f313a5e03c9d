//! SSE frames (contract section 2): `data: <compact JSON>\n\n`.

use crate::framing::Event;
use crate::json::{self, Map, Value};

pub const KEEPALIVE: &[u8] = b": ping\n\n";

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

/// Writes a `TEXT_MESSAGE_CONTENT` frame from the open message's precomputed prefix.
pub fn write_content_frame(out: &mut Vec<u8>, prefix: &[u8], delta: &str) {
    if json::needs_escape(delta) {
        out.extend_from_slice(prefix);
        json::write_str(out, delta);
        out.extend_from_slice(CONTENT_END);
        return;
    }
    // The common case, a few plain characters: one reservation, three copies.
    out.reserve(prefix.len() + delta.len() + 2 + CONTENT_END.len());
    out.extend_from_slice(prefix);
    out.push(b'"');
    out.extend_from_slice(delta.as_bytes());
    out.extend_from_slice(b"\"}\n\n");
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
    fn one_frame() {
        let mut out = Vec::new();
        write_frame(&mut out, &event("RUN_STARTED"));
        assert_eq!(out, b"data: {\"type\":\"RUN_STARTED\"}\n\n");
    }
}
