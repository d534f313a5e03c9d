//! The framing core (contract section 1) that both input dialects drive.
//!
//! A dialect validates an item completely before calling in here
//! (`check_fresh` included), so nothing else here fails on bad input: a call
//! either emits events or counts a drop.

use crate::error::CrumbError;
use crate::json::{self, Map, Value};
use crate::messages::RunMessages;
use crate::sse::{self, EventIds};

/// The run's id and name sets. Their keys are short ids hashed several times
/// per tool call: foldhash (randomly seeded per set) costs a fraction of std's `SipHash`.
pub type HashSet<T> = std::collections::HashSet<T, foldhash::fast::RandomState>;
pub type IndexSet<T> = indexmap::IndexSet<T, foldhash::fast::RandomState>;
pub type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use crate::event::Event;

pub fn event(kind: &'static str) -> Event {
    Event::new(kind)
}

fn put(event: &mut Event, key: &'static str, value: impl Into<Value>) {
    event.put(key, value);
}

/// A fresh id for a thread or run the caller did not name.
pub fn generated_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

#[cold]
fn held_error(item_type: &str, field: &str, id: &str) -> CrumbError {
    let mut quoted = Vec::with_capacity(id.len() + 2);
    json::write_str(&mut quoted, id);
    let quoted = String::from_utf8_lossy(&quoted);
    CrumbError::new(format!(
        "{item_type}: '{field}' {quoted} is already held by the thread"
    ))
}

#[derive(Clone, Copy)]
pub enum IdKind {
    Message,
    Result,
    Tool,
    Interrupt,
    Reasoning,
    Activity,
}

impl IdKind {
    fn letter(self) -> &'static str {
        match self {
            IdKind::Message => "m",
            IdKind::Result => "r",
            IdKind::Tool => "t",
            IdKind::Interrupt => "i",
            IdKind::Reasoning => "th",
            IdKind::Activity => "a",
        }
    }
}

// Independent flags of the run's life, each read on its own: not a state enum.
#[allow(clippy::struct_excessive_bools)]
#[derive(Debug, Clone)]
pub struct Framer {
    pub thread_id: String,
    pub run_id: String,
    pub started: bool,
    pub finished: bool,
    /// The run ended with `RUN_ERROR`.
    pub errored: bool,
    /// The run ended with the `cancelled` outcome (a 1.0 client's stop).
    pub told_cancelled: bool,
    pub out: Vec<Event>,
    pub text_id: Option<String>,
    pub latest_text_id: Option<String>,
    /// The open reasoning message (contract section 8), and the latest one.
    pub reasoning_id: Option<String>,
    pub latest_reasoning_id: Option<String>,
    /// The reasoning messages of the run, which an encrypted value may name.
    pub(crate) reasoning_ids: HashSet<String>,
    /// The client declared AG-UI 1.0 or later (contract section 8).
    pub protocol_v1: bool,
    /// The token usage the agent reported in the run.
    pub usage: crate::usage::Usage,
    /// The SSE bytes of a `TEXT_MESSAGE_CONTENT` frame up to its delta, for the open message.
    pub content_prefix: Vec<u8>,
    /// How many text messages the run opened: tells a cache of the open one it is stale.
    pub texts_opened: u64,
    // Ordered sets: closing order is the order of opening.
    pub(crate) open_tools: IndexSet<String>,
    pub(crate) known_tools: HashSet<String>,
    steps: IndexSet<String>,
    /// AG-UI 1.0 subagents (`subagents.rs`): closed by the terminal events.
    pub subagents: crate::subagents::Subagents,
    pub state: Map<String, Value>,
    pub used_ids: HashSet<String>,
    /// The ids the thread already holds (contract section 6): generated ids
    /// skip them, and an agent may not open anything under one of them.
    held: HashSet<String>,
    counters: [u64; 6],
    pub dropped: u64,
    pub ignored: u64,
    close_text_always: bool,
    /// Every event leaves through `take_out`, `write_out` or the fast writers
    /// below, which number it (contract section 7).
    pub event_ids: EventIds,
    /// What the run has made so far, for `snapshot()`.
    pub messages: RunMessages,
    /// Coalescing (off: 0): the byte cap of a merged delta.
    pub coalesce_bytes: usize,
    /// The delta held back, merged with the next ones for the same message or call.
    pending: Option<Pending>,
}

/// A held delta: `TEXT_MESSAGE_CONTENT` of the open message or `TOOL_CALL_ARGS` of `target`.
#[derive(Debug, Clone)]
struct Pending {
    args: bool,
    target: String,
    delta: String,
}

impl Framer {
    pub fn new(
        thread_id: String,
        run_id: String,
        state: Map<String, Value>,
        close_text_always: bool,
    ) -> Self {
        Self {
            thread_id,
            run_id,
            started: false,
            finished: false,
            errored: false,
            told_cancelled: false,
            out: Vec::new(),
            text_id: None,
            latest_text_id: None,
            reasoning_id: None,
            latest_reasoning_id: None,
            reasoning_ids: HashSet::default(),
            protocol_v1: false,
            usage: crate::usage::Usage::default(),
            content_prefix: Vec::new(),
            texts_opened: 0,
            open_tools: IndexSet::default(),
            known_tools: HashSet::default(),
            steps: IndexSet::default(),
            subagents: crate::subagents::Subagents::default(),
            state,
            used_ids: HashSet::default(),
            held: HashSet::default(),
            counters: [0; 6],
            dropped: 0,
            ignored: 0,
            close_text_always,
            event_ids: EventIds::default(),
            messages: RunMessages::new(),
            coalesce_bytes: 0,
            pending: None,
        }
    }

    pub fn holds(&self, id: &str) -> bool {
        self.held.contains(id)
    }

    /// Adds ids the thread already holds.
    pub fn hold(&mut self, ids: impl IntoIterator<Item = String>) {
        self.held.extend(ids);
    }

    /// An agent-supplied id that opens a tool call or an interrupt must be new
    /// to the thread: reusing one would merge this run's output into an
    /// earlier message on the client and lose it in the store.
    pub fn check_fresh(&self, item_type: &str, field: &str, id: &str) -> Result<(), CrumbError> {
        if self.held.contains(id) {
            return Err(held_error(item_type, field, id));
        }
        Ok(())
    }

    pub fn is_open_tool(&self, tool_call_id: &str) -> bool {
        self.open_tools.contains(tool_call_id)
    }

    pub fn closes_text_always(&self) -> bool {
        self.close_text_always
    }

    /// A delta is held back (coalescing): `flush_held` emits it.
    pub fn is_holding(&self) -> bool {
        self.pending.is_some()
    }

    /// Holds a content or arguments delta of the open message or call, merged
    /// with the held one when it is for the same; held bytes reaching the cap go out.
    fn hold_delta(&mut self, args: bool, target: &str, delta: &str) {
        if let Some(pending) = &self.pending
            && (pending.target != target
                || pending.args != args
                || pending.delta.len() + delta.len() > self.coalesce_bytes)
        {
            self.flush_held();
        }
        let pending = self.pending.get_or_insert_with(|| Pending {
            args,
            target: target.to_owned(),
            delta: String::new(),
        });
        pending.delta.push_str(delta);
        if pending.delta.len() >= self.coalesce_bytes {
            self.flush_held();
        }
    }

    /// Emits the held delta as one event (recorded for the snapshot only now).
    pub fn flush_held(&mut self) {
        let Some(Pending {
            args,
            target,
            delta,
        }) = self.pending.take()
        else {
            return;
        };
        let mut event = if args {
            self.messages.tool_args(&target, &delta);
            let mut event = event("TOOL_CALL_ARGS");
            put(&mut event, "toolCallId", target);
            event
        } else {
            self.messages.push_text(&delta);
            let mut event = event("TEXT_MESSAGE_CONTENT");
            put(&mut event, "messageId", target);
            event
        };
        put(&mut event, "delta", delta);
        self.out.push(event);
    }

    pub fn emit(&mut self, event: Event) {
        if self.pending.is_some() {
            self.flush_held();
        }
        if self.close_text_always && self.text_id.is_some() {
            self.close_text();
        }
        self.out.push(event);
    }

    pub fn new_id(&mut self, kind: IdKind) -> String {
        let slot = kind as usize;
        let mut n = self.counters[slot];
        // Built by hand: `format!` was most of what opening a message or a
        // result cost (about 1,300 instructions an id).
        let prefix = self.run_id.len() + 1 + kind.letter().len();
        let mut candidate = String::with_capacity(prefix + 20);
        candidate.push_str(&self.run_id);
        candidate.push(':');
        candidate.push_str(kind.letter());
        let candidate = loop {
            n += 1;
            candidate.truncate(prefix);
            json::push_u64(&mut candidate, n);
            if !self.used_ids.contains(&candidate) && !self.held.contains(&candidate) {
                break candidate;
            }
        };
        self.counters[slot] = n;
        self.used_ids.insert(candidate.clone());
        candidate
    }

    pub fn start(&mut self, thread_id: Option<String>, run_id: Option<String>) {
        if let Some(thread_id) = thread_id {
            self.thread_id = thread_id;
        }
        if let Some(run_id) = run_id {
            self.run_id = run_id;
        }
        self.started = true;
        self.flush_held();
        let mut event = event("RUN_STARTED");
        put(&mut event, "threadId", self.thread_id.clone());
        put(&mut event, "runId", self.run_id.clone());
        if self.protocol_v1 {
            put(
                &mut event,
                "protocolVersion",
                crate::usage::PROTOCOL_VERSION,
            );
        }
        self.out.push(event);
    }

    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        let message_id = if let Some(id) = &self.text_id {
            id.clone()
        } else {
            self.flush_held();
            self.close_reasoning();
            let id = self.new_id(IdKind::Message);
            let mut start = event("TEXT_MESSAGE_START");
            put(&mut start, "messageId", id.clone());
            put(&mut start, "role", "assistant");
            self.out.push(start);
            self.open_text(id.clone());
            id
        };
        if self.coalesce_bytes > 0 {
            self.hold_delta(false, &message_id, delta);
            return;
        }
        let mut content = event("TEXT_MESSAGE_CONTENT");
        put(&mut content, "messageId", message_id);
        put(&mut content, "delta", delta);
        self.out.push(content);
        self.messages.push_text(delta);
    }

    fn open_text(&mut self, id: String) {
        self.content_prefix.clear();
        self.content_prefix
            .extend_from_slice(br#"data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"#);
        json::write_str(&mut self.content_prefix, &id);
        self.content_prefix.extend_from_slice(br#","delta":"#);
        self.messages.open_text(&id);
        self.texts_opened += 1;
        self.text_id = Some(id.clone());
        self.latest_text_id = Some(id);
    }

    /// Opens a text message under a given id (closing the open one); content follows.
    pub fn open_text_as(&mut self, message_id: String) {
        self.close_reasoning();
        self.close_text();
        self.flush_held();
        self.used_ids.insert(message_id.clone());
        let mut start = event("TEXT_MESSAGE_START");
        put(&mut start, "messageId", message_id.clone());
        put(&mut start, "role", "assistant");
        self.out.push(start);
        self.open_text(message_id);
    }

    pub fn close_text(&mut self) {
        if self.text_id.is_some() {
            self.flush_held();
        }
        if let Some(message_id) = self.text_id.take() {
            self.messages.close_text();
            let mut event = event("TEXT_MESSAGE_END");
            put(&mut event, "messageId", message_id);
            self.out.push(event);
        }
    }

    pub fn tool_start(&mut self, tool_call_id: &str, tool_name: &str) -> bool {
        if self.known_tools.contains(tool_call_id) {
            self.dropped += 1;
            return false;
        }
        self.close_reasoning();
        self.close_text();
        self.known_tools.insert(tool_call_id.to_owned());
        self.used_ids.insert(tool_call_id.to_owned());
        self.open_tools.insert(tool_call_id.to_owned());
        let mut event = event("TOOL_CALL_START");
        put(&mut event, "toolCallId", tool_call_id);
        put(&mut event, "toolCallName", tool_name);
        if let Some(parent) = &self.latest_text_id {
            put(&mut event, "parentMessageId", parent.clone());
        }
        self.messages
            .tool_start(tool_call_id, tool_name, self.latest_text_id.as_deref());
        self.emit(event);
        true
    }

    pub fn is_known_tool(&self, tool_call_id: &str) -> bool {
        self.known_tools.contains(tool_call_id)
    }

    pub fn last_open_tool(&self) -> Option<String> {
        self.open_tools.last().cloned()
    }

    pub fn tool_args(&mut self, tool_call_id: &str, delta: &str) {
        if !self.open_tools.contains(tool_call_id) {
            self.dropped += 1;
        } else if !delta.is_empty() && self.coalesce_bytes > 0 {
            // As emit() would for the event: the text closes first (crumbs).
            if self.close_text_always && self.text_id.is_some() {
                self.close_text();
            }
            self.hold_delta(true, tool_call_id, delta);
        } else if !delta.is_empty() {
            self.messages.tool_args(tool_call_id, delta);
            let mut event = event("TOOL_CALL_ARGS");
            put(&mut event, "toolCallId", tool_call_id);
            put(&mut event, "delta", delta);
            self.emit(event);
        }
    }

    pub fn tool_end(&mut self, tool_call_id: &str) {
        if !self.open_tools.shift_remove(tool_call_id) {
            self.dropped += 1;
            return;
        }
        let mut event = event("TOOL_CALL_END");
        put(&mut event, "toolCallId", tool_call_id);
        self.emit(event);
    }

    pub fn tool_result(&mut self, tool_call_id: &str, content: String) {
        if !self.known_tools.contains(tool_call_id) {
            self.dropped += 1;
            return;
        }
        if self.open_tools.contains(tool_call_id) {
            self.tool_end(tool_call_id);
        }
        let message_id = self.new_id(IdKind::Result);
        self.messages
            .tool_result(&message_id, tool_call_id, &content);
        let mut event = event("TOOL_CALL_RESULT");
        put(&mut event, "messageId", message_id);
        put(&mut event, "toolCallId", tool_call_id);
        put(&mut event, "content", content);
        put(&mut event, "role", "tool");
        self.emit(event);
    }

    pub fn step_start(&mut self, name: &str) {
        if self.steps.contains(name) {
            self.dropped += 1;
            return;
        }
        self.steps.insert(name.to_owned());
        let mut event = event("STEP_STARTED");
        put(&mut event, "stepName", name);
        self.emit(event);
    }

    pub fn step_end(&mut self, name: &str) {
        if !self.steps.shift_remove(name) {
            self.dropped += 1;
            return;
        }
        let mut event = event("STEP_FINISHED");
        put(&mut event, "stepName", name);
        self.emit(event);
    }

    /// A shallow merge: a merged key keeps its first position, as in a Python dict.
    pub fn snapshot<K: Into<String>>(&mut self, updates: impl IntoIterator<Item = (K, Value)>) {
        for (key, value) in updates {
            self.state.insert(key.into(), value);
        }
        let mut event = event("STATE_SNAPSHOT");
        put(&mut event, "snapshot", Value::Object(self.state.clone()));
        self.emit(event);
    }

    /// `state` is the run state with `delta` applied (`patch::apply_patch`).
    pub fn state_delta(&mut self, state: Map<String, Value>, delta: Value) {
        self.state = state;
        let mut event = event("STATE_DELTA");
        put(&mut event, "delta", delta);
        self.emit(event);
    }

    pub fn custom(&mut self, name: &str, value: Value) {
        let mut event = event("CUSTOM");
        put(&mut event, "name", name);
        put(&mut event, "value", value);
        self.emit(event);
    }

    pub fn close_all(&mut self) {
        self.close_reasoning();
        self.close_text();
        let open: Vec<String> = self.open_tools.iter().cloned().collect();
        for tool_call_id in open {
            self.tool_end(&tool_call_id);
        }
        let steps: Vec<String> = self.steps.iter().rev().cloned().collect();
        for name in steps {
            self.step_end(&name);
        }
    }

    pub fn run_finished(&mut self, result: Option<Value>, outcome: Option<Value>) {
        self.close_all();
        crate::subagents::close_open(self, None);
        let mut event = event("RUN_FINISHED");
        put(&mut event, "threadId", self.thread_id.clone());
        put(&mut event, "runId", self.run_id.clone());
        if let Some(result) = result.filter(|value| !value.is_null()) {
            put(&mut event, "result", result);
        }
        if let Some(outcome) = outcome {
            put(&mut event, "outcome", outcome);
        }
        self.put_usage(&mut event);
        self.emit(event);
        self.finished = true;
    }

    pub fn run_error(&mut self, message: &str, code: Option<&str>) {
        self.close_all();
        crate::subagents::close_open(self, Some((message, code)));
        let mut event = event("RUN_ERROR");
        put(&mut event, "message", message);
        if let Some(code) = code {
            put(&mut event, "code", code);
        }
        self.put_usage(&mut event);
        self.emit(event);
        self.finished = true;
        self.errored = true;
    }

    /// A 1.0 client's terminal event carries the run's token usage (contract section 8).
    fn put_usage(&self, event: &mut Event) {
        if self.protocol_v1
            && let Some(usage) = self.usage.to_value()
        {
            put(event, "usage", usage);
        }
    }

    /// A run stopped by a cancel: a 1.0 client is told so (contract section 8).
    pub fn run_cancelled(&mut self) {
        self.told_cancelled = true;
        let mut outcome = Map::new();
        outcome.insert("type".to_owned(), "cancelled".into());
        self.run_finished(None, Some(Value::Object(outcome)));
    }

    /// This run's messages (open text and arguments left empty) and the
    /// events that re-open what is open, carrying what it streamed.
    pub fn run_snapshot(&self) -> (Vec<Value>, Vec<Value>) {
        let text = self.text_id.as_deref();
        let reasoning = self.reasoning_id.as_deref();
        let mut open = crate::subagents::opening(self);
        open.extend(
            self.messages
                .open_events(&self.steps, reasoning, text, &self.open_tools),
        );
        (
            self.messages.messages(text, reasoning, &self.open_tools),
            open,
        )
    }

    /// The events of the last call, numbered, for a caller that hands them over as dicts.
    pub fn take_out(&mut self) -> Vec<Event> {
        self.event_ids.skip(self.out.len());
        std::mem::take(&mut self.out)
    }

    /// The events of the last call, numbered, with their frames appended to `frames`.
    pub fn take_out_written(&mut self, frames: &mut Vec<u8>) -> Vec<Event> {
        self.event_ids.write_frames(frames, &self.out);
        std::mem::take(&mut self.out)
    }

    /// Writes the events of the last call as numbered frames; `out` keeps its capacity.
    pub fn write_out(&mut self, frames: &mut Vec<u8>) {
        self.event_ids.write_frames(frames, &self.out);
        self.out.clear();
    }

    /// The numbered frame of a delta for the open message, straight from its
    /// text, and its record (read back from the frame when written as it is:
    /// the frame's prefix before it makes that copy branch-free).
    pub fn write_content(&mut self, frames: &mut Vec<u8>, delta: &str) {
        self.event_ids.write_next(frames);
        if let Some(end) = sse::write_content_frame(frames, &self.content_prefix, delta) {
            self.messages.push_text_written(&frames[..end], delta.len());
        } else {
            self.messages.push_text(delta);
        }
    }

    /// Records a delta the fast path decided is content (`FastText::Content`)
    /// and sends other than through `write_content`.
    pub fn record_content(&mut self, delta: &str) {
        self.messages.push_text(delta);
    }

    /// Records arguments the fast path decided are content, sent as an event.
    pub fn record_tool_args(&mut self, tool_call_id: &str, delta: &str) {
        self.messages.tool_args(tool_call_id, delta);
    }

    /// The numbered frame of a piece of arguments for an open call.
    pub fn write_tool_args(&mut self, frames: &mut Vec<u8>, tool_call_id: &str, delta: &str) {
        self.event_ids.write_next(frames);
        sse::write_tool_args_frame(frames, tool_call_id, delta);
        self.messages.tool_args(tool_call_id, delta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framer() -> Framer {
        Framer::new("t".into(), "r".into(), Map::new(), false)
    }

    #[test]
    fn ids_skip_used_values() {
        let mut framer = framer();
        framer.used_ids.insert("r:m1".into());
        framer.used_ids.insert("r:m3".into());
        assert_eq!(framer.new_id(IdKind::Message), "r:m2");
        assert_eq!(framer.new_id(IdKind::Message), "r:m4");
        assert_eq!(framer.new_id(IdKind::Tool), "r:t1");
    }

    #[test]
    fn ids_skip_held_values_and_held_ids_are_not_fresh() {
        let mut framer = framer();
        framer.hold(["r:m1".to_owned(), "r:i1".to_owned(), "c\"1".to_owned()]);
        assert_eq!(framer.new_id(IdKind::Message), "r:m2");
        assert_eq!(framer.new_id(IdKind::Interrupt), "r:i2");
        assert!(framer.check_fresh("tool:call", "toolCallId", "c2").is_ok());
        assert_eq!(
            framer
                .check_fresh("tool:call", "toolCallId", "c\"1")
                .unwrap_err()
                .message(),
            r#"tool:call: 'toolCallId' "c\"1" is already held by the thread"#
        );
    }

    #[test]
    fn closes_before_terminal_in_order() {
        let mut framer = framer();
        framer.start(None, None);
        framer.step_start("a");
        framer.step_start("b");
        framer.text("hi");
        assert!(framer.tool_start("x", "f"));
        assert!(framer.tool_start("y", "f"));
        framer.run_finished(None, None);
        let types: Vec<&str> = framer.out.iter().map(|e| e.kind).collect();
        assert_eq!(
            types,
            [
                "RUN_STARTED",
                "STEP_STARTED",
                "STEP_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_START",
                "TOOL_CALL_END",
                "TOOL_CALL_END",
                "STEP_FINISHED",
                "STEP_FINISHED",
                "RUN_FINISHED",
            ]
        );
        assert_eq!(framer.out[8]["toolCallId"], "x");
        assert_eq!(framer.out[10]["stepName"], "b");
        assert_eq!(framer.out[6]["parentMessageId"], "r:m1");
    }

    #[test]
    fn hygiene_drops() {
        let mut framer = framer();
        framer.start(None, None);
        framer.tool_args("nope", "x");
        framer.tool_end("nope");
        framer.tool_result("nope", String::new());
        framer.step_end("nope");
        framer.step_start("s");
        framer.step_start("s");
        assert!(framer.tool_start("x", "f"));
        assert!(!framer.tool_start("x", "f"));
        assert_eq!(framer.dropped, 6);
    }
}
