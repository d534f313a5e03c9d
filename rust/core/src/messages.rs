//! The run's messages and what is open, for `snapshot()` (docs/contract-notes.md).
//!
//! The framer tells this record what it emits; nothing here reads events.
//! Messages come out as `@ag-ui/client`'s reducer builds them from the run's
//! events (1.0.0 and 0.0.58 agree): a text message is an assistant message; a
//! tool call joins the message named by its `parentMessageId`, or, without
//! one, a new assistant message whose id is the tool call's; a tool result
//! goes right after the message holding its call and the tool messages that
//! follow it; an activity message (`ACTIVITY_SNAPSHOT` of a new id) goes last
//! and keeps its place when a later snapshot or delta changes it.

use std::cell::Cell;
use std::hash::BuildHasher;

use crate::appended::Appended;
use crate::framing::{HashMap, IndexSet};
use crate::json::{Map, Value};

/// Where a string sits in `RunMessages::strings`: the record's ids, names and
/// results share one buffer, so recording them allocates nothing per message.
#[derive(Debug, Clone, Copy)]
struct Span(usize, usize);

#[derive(Debug, Clone)]
struct Assistant {
    id: Span,
    /// Where its text sits in `RunMessages::text` (the end is `usize::MAX`
    /// while it streams); `None`: made for a tool call without a parent, so
    /// no content key.
    content: Option<(usize, usize)>,
}

#[derive(Debug, Clone)]
struct Call {
    id: Span,
    name: Span,
    parent: Option<Span>,
    /// The assistant message holding the call.
    owner: usize,
    args: String,
    /// A `tool-call` encrypted value (contract section 8), the latest one.
    encrypted: Option<String>,
    /// The previous call whose id has the same hash (`RunMessages::call_at`).
    same_hash: Option<usize>,
}

/// A reasoning message (contract section 8): an AG-UI 1.0 `reasoning` message.
#[derive(Debug, Clone)]
struct Reasoning {
    id: String,
    /// Where its text sits in `RunMessages::reasoning_text` (the end is `usize::MAX` while open).
    content: (usize, usize),
    encrypted: Option<String>,
}

/// An activity message (AG-UI 1.0 `activity`), as the client's reducer has it.
#[derive(Debug, Clone)]
struct Activity {
    id: String,
    /// Its `activityType`.
    kind: String,
    content: Map<String, Value>,
}

#[derive(Debug, Clone)]
enum Entry {
    Assistant(usize),
    Reasoning(usize),
    Activity(usize),
    Result {
        id: Span,
        tool_call_id: Span,
        content: Span,
        owner: usize,
    },
}

#[derive(Debug, Clone, Default)]
pub struct RunMessages {
    /// In order of creation.
    entries: Vec<Entry>,
    assistants: Vec<Assistant>,
    /// The text of every text message of the run, one after the other: only
    /// one is open at a time, so a delta is an append and a message a range.
    text: Appended,
    /// The latest text message, which a tool call's `parentMessageId` names.
    latest_text: Option<usize>,
    /// The ids, names and results' content the record holds, one after the other.
    strings: String,
    /// The run's tool calls, in order of creation.
    calls: Vec<Call>,
    /// The hash of a tool call id: the latest call whose id has it.
    call_at: HashMap<u64, usize>,
    /// Emptied argument buffers of a finished run's calls, for this run's.
    spare_args: Vec<String>,
    reasonings: Vec<Reasoning>,
    /// The text of every reasoning message, one after the other (one is open at a time).
    reasoning_text: String,
    activities: Vec<Activity>,
    /// An activity's id: its place in `activities`.
    activity_at: HashMap<String, usize>,
}

/// Off only in the build `benches/builds.py` compares against, to measure
/// what recording costs (`--no-default-features`): its snapshots are empty.
const RECORD: bool = cfg!(feature = "record");

fn object(pairs: impl IntoIterator<Item = (&'static str, Value)>) -> Value {
    Value::Object(
        pairs
            .into_iter()
            .map(|(key, value)| (key.to_owned(), value))
            .collect::<Map<String, Value>>(),
    )
}

/// The buffers of a finished run's record, emptied, their capacity kept for
/// the next run made on this thread: grown once rather than in every run,
/// where their allocations were most of what recording cost.
#[derive(Default)]
struct Spare {
    entries: Vec<Entry>,
    assistants: Vec<Assistant>,
    text: Appended,
    strings: String,
    calls: Vec<Call>,
    call_at: HashMap<u64, usize>,
    args: Vec<String>,
}

thread_local! {
    static SPARE: Cell<Option<Spare>> = const { Cell::new(None) };
}

/// A record whose text or strings grew past this is freed, not kept.
const SPARE_KEPT: usize = 1 << 20;
/// How many emptied argument buffers are kept, and the largest kept.
const SPARE_ARGS: usize = 64;
const SPARE_ARGS_KEPT: usize = 4096;

/// Hashes a tool call id for `call_at`: one seed for every record (the map
/// hashes the hash again with its own random seed).
fn id_hash(id: &str) -> u64 {
    foldhash::fast::FixedState::with_seed(0x5eed).hash_one(id)
}

impl RunMessages {
    /// An empty record, with the buffers of the last one dropped on this thread.
    pub fn new() -> Self {
        let spare = if RECORD {
            SPARE.try_with(Cell::take).ok().flatten()
        } else {
            None
        };
        let mut record = Self::default();
        if let Some(spare) = spare {
            record.entries = spare.entries;
            record.assistants = spare.assistants;
            record.text = spare.text;
            record.strings = spare.strings;
            record.calls = spare.calls;
            record.call_at = spare.call_at;
            record.spare_args = spare.args;
        }
        record
    }

    fn string(&self, span: Span) -> &str {
        &self.strings[span.0..span.1]
    }

    fn keep(&mut self, text: &str) -> Span {
        let start = self.strings.len();
        self.strings.push_str(text);
        Span(start, self.strings.len())
    }

    /// The tool call of this run with this id.
    fn call(&self, id: &str) -> Option<usize> {
        let mut at = *self.call_at.get(&id_hash(id))?;
        loop {
            let call = &self.calls[at];
            if self.string(call.id) == id {
                return Some(at);
            }
            at = call.same_hash?;
        }
    }

    pub fn open_text(&mut self, id: &str) {
        if !RECORD {
            return;
        }
        let at = self.push_assistant(id, Some((self.text.len(), usize::MAX)));
        self.latest_text = Some(at);
    }

    /// A delta of the open text message.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn push_text(&mut self, delta: &str) {
        if !RECORD {
            return;
        }
        self.text.push_str(delta);
    }

    /// A delta of the open text message, the last `n` bytes of `frames`
    /// (written there as it is, after the frame's prefix).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn push_text_written(&mut self, frames: &[u8], n: usize) {
        if !RECORD {
            return;
        }
        self.text.push_ending(frames, n);
    }

    /// The open text message closes: its text ends here.
    pub fn close_text(&mut self) {
        if !RECORD {
            return;
        }
        let end = self.text.len();
        if let Some(Some((_, open @ usize::MAX))) =
            self.latest_text.map(|at| &mut self.assistants[at].content)
        {
            *open = end;
        }
    }

    pub fn open_reasoning(&mut self, id: &str) {
        self.entries.push(Entry::Reasoning(self.reasonings.len()));
        self.reasonings.push(Reasoning {
            id: id.to_owned(),
            content: (self.reasoning_text.len(), usize::MAX),
            encrypted: None,
        });
    }

    pub fn push_reasoning(&mut self, delta: &str) {
        self.reasoning_text.push_str(delta);
    }

    pub fn close_reasoning(&mut self) {
        let end = self.reasoning_text.len();
        if let Some(last) = self.reasonings.last_mut()
            && last.content.1 == usize::MAX
        {
            last.content.1 = end;
        }
    }

    /// The content of this run's activity `id` (`None`: the run made none).
    pub fn activity(&self, id: &str) -> Option<&Map<String, Value>> {
        self.activity_at
            .get(id)
            .map(|&at| &self.activities[at].content)
    }

    /// An activity as the client now has it: a new one goes last, a known one
    /// keeps its place. Not behind `RECORD`: the events dialect applies deltas to it.
    pub fn set_activity(&mut self, id: &str, activity_type: &str, content: Map<String, Value>) {
        if let Some(&at) = self.activity_at.get(id) {
            let activity = &mut self.activities[at];
            activity_type.clone_into(&mut activity.kind);
            activity.content = content;
            return;
        }
        let at = self.activities.len();
        self.activity_at.insert(id.to_owned(), at);
        self.activities.push(Activity {
            id: id.to_owned(),
            kind: activity_type.to_owned(),
            content,
        });
        self.entries.push(Entry::Activity(at));
    }

    /// An encrypted value for a reasoning message or a tool call of this run.
    pub fn encrypted(&mut self, subtype: &str, id: &str, value: &str) {
        if subtype == "tool-call" {
            if let Some(at) = self.call(id) {
                self.calls[at].encrypted = Some(value.to_owned());
            }
        } else if let Some(reasoning) = self.reasonings.iter_mut().rev().find(|r| r.id == id) {
            reasoning.encrypted = Some(value.to_owned());
        }
    }

    fn reasoning_content(&self, reasoning: &Reasoning) -> &str {
        let (start, end) = reasoning.content;
        &self.reasoning_text[start..end.min(self.reasoning_text.len())]
    }

    fn content(&self, message: &Assistant) -> Option<&str> {
        message
            .content
            .map(|(start, end)| self.text.get(start, end.min(self.text.len())))
    }

    fn push_assistant(&mut self, id: &str, content: Option<(usize, usize)>) -> usize {
        let at = self.assistants.len();
        let id = self.keep(id);
        self.assistants.push(Assistant { id, content });
        self.entries.push(Entry::Assistant(at));
        at
    }

    /// `parent`: the latest text message's id, which the call's START names.
    pub fn tool_start(&mut self, id: &str, name: &str, parent: Option<&str>) {
        if !RECORD {
            return;
        }
        let owner = match (parent, self.latest_text) {
            (Some(_), Some(owner)) => owner,
            _ => self.push_assistant(id, None),
        };
        let at = self.calls.len();
        let same_hash = self.call_at.insert(id_hash(id), at);
        let call = Call {
            id: self.keep(id),
            name: self.keep(name),
            parent: parent.map(|parent| self.keep(parent)),
            owner,
            args: self.spare_args.pop().unwrap_or_default(),
            encrypted: None,
            same_hash,
        };
        self.calls.push(call);
    }

    pub fn tool_args(&mut self, id: &str, delta: &str) {
        if !RECORD {
            return;
        }
        // The call streaming now is nearly always the latest one: its id
        // compared spares hashing it for every piece.
        let at = match self.calls.last() {
            Some(last) if self.string(last.id) == id => Some(self.calls.len() - 1),
            _ => self.call(id),
        };
        if let Some(at) = at {
            self.calls[at].args.push_str(delta);
        }
    }

    pub fn tool_result(&mut self, id: &str, tool_call_id: &str, content: &str) {
        if !RECORD {
            return;
        }
        if let Some(at) = self.call(tool_call_id) {
            let owner = self.calls[at].owner;
            let result = Entry::Result {
                id: self.keep(id),
                tool_call_id: self.keep(tool_call_id),
                content: self.keep(content),
                owner,
            };
            self.entries.push(result);
        }
    }

    fn assistant(
        &self,
        message: &Assistant,
        calls: &[&Call],
        open_text: Option<&str>,
        open_tools: &IndexSet<String>,
    ) -> Value {
        let mut out = Map::new();
        let id = self.string(message.id);
        out.insert("id".to_owned(), id.into());
        out.insert("role".to_owned(), "assistant".into());
        if let Some(content) = self.content(message) {
            let shown = if open_text == Some(id) { "" } else { content };
            out.insert("content".to_owned(), shown.into());
        }
        if !calls.is_empty() {
            let calls = calls.iter().map(|call| {
                let id = self.string(call.id);
                let args = if open_tools.contains(id) {
                    ""
                } else {
                    &call.args
                };
                let mut out = Map::new();
                out.insert("id".to_owned(), id.into());
                out.insert("type".to_owned(), "function".into());
                out.insert(
                    "function".to_owned(),
                    object([
                        ("name", self.string(call.name).into()),
                        ("arguments", args.into()),
                    ]),
                );
                if let Some(value) = &call.encrypted {
                    out.insert("encryptedValue".to_owned(), value.as_str().into());
                }
                Value::Object(out)
            });
            out.insert("toolCalls".to_owned(), Value::Array(calls.collect()));
        }
        Value::Object(out)
    }

    /// The messages; what is still open has its streamed text left out (see `open_events`).
    pub fn messages(
        &self,
        open_text: Option<&str>,
        open_reasoning: Option<&str>,
        open_tools: &IndexSet<String>,
    ) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::with_capacity(self.entries.len());
        // Where each assistant message sits in `out`, kept up to date on insertion.
        let mut places: Vec<usize> = vec![0; self.assistants.len()];
        // Each assistant message's calls, in order.
        let mut calls: Vec<Vec<&Call>> = vec![Vec::new(); self.assistants.len()];
        for call in &self.calls {
            calls[call.owner].push(call);
        }
        for entry in &self.entries {
            match entry {
                Entry::Assistant(at) => {
                    places[*at] = out.len();
                    let message = &self.assistants[*at];
                    out.push(self.assistant(message, &calls[*at], open_text, open_tools));
                }
                Entry::Reasoning(at) => {
                    let reasoning = &self.reasonings[*at];
                    let open = open_reasoning == Some(reasoning.id.as_str())
                        && reasoning.content.1 == usize::MAX;
                    let content = if open {
                        ""
                    } else {
                        self.reasoning_content(reasoning)
                    };
                    let mut message = Map::new();
                    message.insert("id".to_owned(), reasoning.id.as_str().into());
                    message.insert("role".to_owned(), "reasoning".into());
                    message.insert("content".to_owned(), content.into());
                    if let Some(value) = &reasoning.encrypted {
                        message.insert("encryptedValue".to_owned(), value.as_str().into());
                    }
                    out.push(Value::Object(message));
                }
                Entry::Activity(at) => {
                    let activity = &self.activities[*at];
                    out.push(object([
                        ("id", activity.id.as_str().into()),
                        ("role", "activity".into()),
                        ("activityType", activity.kind.as_str().into()),
                        ("content", Value::Object(activity.content.clone())),
                    ]));
                }
                Entry::Result {
                    id,
                    tool_call_id,
                    content,
                    owner,
                } => {
                    let mut at = places[*owner] + 1;
                    while at < out.len() && out[at]["role"] == "tool" {
                        at += 1;
                    }
                    for place in &mut places {
                        if *place >= at {
                            *place += 1;
                        }
                    }
                    let message = object([
                        ("id", self.string(*id).into()),
                        ("toolCallId", self.string(*tool_call_id).into()),
                        ("role", "tool".into()),
                        ("content", self.string(*content).into()),
                    ]);
                    out.insert(at, message);
                }
            }
        }
        out
    }

    /// What re-opens the open steps, text and tool calls, with what they streamed.
    pub fn open_events<'a>(
        &self,
        steps: impl IntoIterator<Item = &'a String>,
        open_reasoning: Option<&str>,
        open_text: Option<&str>,
        open_tools: &IndexSet<String>,
    ) -> Vec<Value> {
        let mut events: Vec<Value> = steps
            .into_iter()
            .map(|name| {
                object([
                    ("type", "STEP_STARTED".into()),
                    ("stepName", name.as_str().into()),
                ])
            })
            .collect();
        if let Some(id) = open_reasoning {
            events.push(object([
                ("type", "REASONING_START".into()),
                ("messageId", id.into()),
            ]));
            events.push(object([
                ("type", "REASONING_MESSAGE_START".into()),
                ("messageId", id.into()),
                ("role", "reasoning".into()),
            ]));
            let content = self
                .reasonings
                .last()
                .map(|reasoning| self.reasoning_content(reasoning))
                .unwrap_or_default();
            if !content.is_empty() {
                events.push(object([
                    ("type", "REASONING_MESSAGE_CONTENT".into()),
                    ("messageId", id.into()),
                    ("delta", content.into()),
                ]));
            }
        }
        if let Some(id) = open_text {
            events.push(object([
                ("type", "TEXT_MESSAGE_START".into()),
                ("messageId", id.into()),
                ("role", "assistant".into()),
            ]));
            let content = self
                .latest_text
                .and_then(|at| self.content(&self.assistants[at]))
                .unwrap_or_default();
            if !content.is_empty() {
                events.push(object([
                    ("type", "TEXT_MESSAGE_CONTENT".into()),
                    ("messageId", id.into()),
                    ("delta", content.into()),
                ]));
            }
        }
        for id in open_tools {
            let Some(at) = self.call(id) else {
                continue;
            };
            let call = &self.calls[at];
            let mut start = Map::new();
            start.insert("type".to_owned(), "TOOL_CALL_START".into());
            start.insert("toolCallId".to_owned(), self.string(call.id).into());
            start.insert("toolCallName".to_owned(), self.string(call.name).into());
            if let Some(parent) = call.parent {
                start.insert("parentMessageId".to_owned(), self.string(parent).into());
            }
            events.push(Value::Object(start));
            if !call.args.is_empty() {
                events.push(object([
                    ("type", "TOOL_CALL_ARGS".into()),
                    ("toolCallId", self.string(call.id).into()),
                    ("delta", call.args.as_str().into()),
                ]));
            }
        }
        events
    }
}

impl Drop for RunMessages {
    fn drop(&mut self) {
        if !RECORD || self.text.capacity().max(self.strings.capacity()) > SPARE_KEPT {
            return;
        }
        let mut args = std::mem::take(&mut self.spare_args);
        for call in self.calls.drain(..) {
            let mut kept = call.args;
            if args.len() < SPARE_ARGS && kept.capacity() <= SPARE_ARGS_KEPT {
                kept.clear();
                args.push(kept);
            }
        }
        let mut spare = Spare {
            entries: std::mem::take(&mut self.entries),
            assistants: std::mem::take(&mut self.assistants),
            text: std::mem::take(&mut self.text),
            strings: std::mem::take(&mut self.strings),
            calls: std::mem::take(&mut self.calls),
            call_at: std::mem::take(&mut self.call_at),
            args,
        };
        spare.entries.clear();
        spare.assistants.clear();
        spare.text.clear();
        spare.strings.clear();
        spare.call_at.clear();
        // During the thread's exit there is no slot: the buffers are freed.
        let _ = SPARE.try_with(|slot| slot.set(Some(spare)));
    }
}

#[cfg(test)]
mod tests {
    use super::RunMessages;
    use crate::framing::IndexSet;
    use crate::json::Value;

    fn record(messages: &mut RunMessages, run: &str) {
        let id = format!("{run}:m1");
        messages.open_text(&id);
        messages.push_text(&format!("{run} says hi, "));
        messages.push_text("and a longer delta than sixteen bytes");
        messages.close_text();
        messages.tool_start(&format!("{run}:c1"), "search", Some(&id));
        messages.tool_args(&format!("{run}:c1"), "{\"q\":");
        messages.tool_args(&format!("{run}:c1"), format!("\"{run}\"}}").as_str());
        messages.tool_result(&format!("{run}:r1"), &format!("{run}:c1"), "found");
    }

    fn shown(messages: &RunMessages) -> Value {
        Value::Array(messages.messages(None, None, &IndexSet::default()))
    }

    #[test]
    fn a_record_made_after_another_is_dropped_holds_only_its_own_run() {
        let mut alone = RunMessages::default();
        record(&mut alone, "b");
        let expected = shown(&alone);

        let mut first = RunMessages::new();
        record(&mut first, "a");
        drop(first);
        // On this thread, `second` reuses `first`'s emptied buffers.
        let mut second = RunMessages::new();
        second.tool_args("a:c1", "lost");
        second.tool_result("a:r2", "a:c1", "lost");
        assert_eq!(shown(&second), Value::Array(Vec::new()));
        record(&mut second, "b");
        assert_eq!(shown(&second), expected);
        assert_eq!(
            expected[0]["content"],
            "b says hi, and a longer delta than sixteen bytes"
        );
        assert_eq!(
            expected[0]["toolCalls"][0]["function"]["arguments"],
            "{\"q\":\"b\"}"
        );
        assert_eq!(expected[1]["content"], "found");
    }
}
