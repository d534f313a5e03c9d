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

use crate::framing::{HashMap, IndexSet};
use crate::json::{Map, Value};

#[derive(Debug, Clone)]
struct Assistant {
    id: String,
    /// Where its text sits in `RunMessages::text` (the end is `usize::MAX`
    /// while it streams); `None`: made for a tool call without a parent, so
    /// no content key.
    content: Option<(usize, usize)>,
    calls: Vec<Call>,
}

#[derive(Debug, Clone)]
struct Call {
    id: String,
    name: String,
    parent: Option<String>,
    args: String,
    /// A `tool-call` encrypted value (contract section 8), the latest one.
    encrypted: Option<String>,
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
        id: String,
        tool_call_id: String,
        content: String,
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
    text: String,
    /// The latest text message, which a tool call's `parentMessageId` names.
    latest_text: Option<usize>,
    /// A tool call id: its message and its place in that message's calls.
    calls: HashMap<String, (usize, usize)>,
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

impl RunMessages {
    pub fn open_text(&mut self, id: &str) {
        if !RECORD {
            return;
        }
        let at = self.push_assistant(id, Some((self.text.len(), usize::MAX)));
        self.latest_text = Some(at);
    }

    /// A delta of the open text message.
    #[inline]
    pub fn push_text(&mut self, delta: &str) {
        if !RECORD {
            return;
        }
        self.text.push_str(delta);
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
            if let Some(&(owner, at)) = self.calls.get(id) {
                self.assistants[owner].calls[at].encrypted = Some(value.to_owned());
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
            .map(|(start, end)| &self.text[start..end.min(self.text.len())])
    }

    fn push_assistant(&mut self, id: &str, content: Option<(usize, usize)>) -> usize {
        let at = self.assistants.len();
        self.assistants.push(Assistant {
            id: id.to_owned(),
            content,
            calls: Vec::new(),
        });
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
        let calls = &mut self.assistants[owner].calls;
        self.calls.insert(id.to_owned(), (owner, calls.len()));
        calls.push(Call {
            id: id.to_owned(),
            name: name.to_owned(),
            parent: parent.map(str::to_owned),
            args: String::new(),
            encrypted: None,
        });
    }

    pub fn tool_args(&mut self, id: &str, delta: &str) {
        if !RECORD {
            return;
        }
        if let Some(&(owner, at)) = self.calls.get(id) {
            self.assistants[owner].calls[at].args.push_str(delta);
        }
    }

    pub fn tool_result(&mut self, id: &str, tool_call_id: &str, content: &str) {
        if !RECORD {
            return;
        }
        if let Some(&(owner, _)) = self.calls.get(tool_call_id) {
            self.entries.push(Entry::Result {
                id: id.to_owned(),
                tool_call_id: tool_call_id.to_owned(),
                content: content.to_owned(),
                owner,
            });
        }
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
        for entry in &self.entries {
            match entry {
                Entry::Assistant(at) => {
                    places[*at] = out.len();
                    let message = &self.assistants[*at];
                    out.push(assistant(
                        message,
                        self.content(message),
                        open_text,
                        open_tools,
                    ));
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
                        ("id", id.as_str().into()),
                        ("toolCallId", tool_call_id.as_str().into()),
                        ("role", "tool".into()),
                        ("content", content.as_str().into()),
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
            let Some(&(owner, at)) = self.calls.get(id) else {
                continue;
            };
            let call = &self.assistants[owner].calls[at];
            let mut start = Map::new();
            start.insert("type".to_owned(), "TOOL_CALL_START".into());
            start.insert("toolCallId".to_owned(), call.id.as_str().into());
            start.insert("toolCallName".to_owned(), call.name.as_str().into());
            if let Some(parent) = &call.parent {
                start.insert("parentMessageId".to_owned(), parent.as_str().into());
            }
            events.push(Value::Object(start));
            if !call.args.is_empty() {
                events.push(object([
                    ("type", "TOOL_CALL_ARGS".into()),
                    ("toolCallId", call.id.as_str().into()),
                    ("delta", call.args.as_str().into()),
                ]));
            }
        }
        events
    }
}

fn assistant(
    message: &Assistant,
    content: Option<&str>,
    open_text: Option<&str>,
    open_tools: &IndexSet<String>,
) -> Value {
    let mut out = Map::new();
    out.insert("id".to_owned(), message.id.as_str().into());
    out.insert("role".to_owned(), "assistant".into());
    if let Some(content) = content {
        let shown = if open_text == Some(message.id.as_str()) {
            ""
        } else {
            content
        };
        out.insert("content".to_owned(), shown.into());
    }
    if !message.calls.is_empty() {
        let calls = message.calls.iter().map(|call| {
            let args = if open_tools.contains(&call.id) {
                ""
            } else {
                &call.args
            };
            let mut out = Map::new();
            out.insert("id".to_owned(), call.id.as_str().into());
            out.insert("type".to_owned(), "function".into());
            out.insert(
                "function".to_owned(),
                object([
                    ("name", call.name.as_str().into()),
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
