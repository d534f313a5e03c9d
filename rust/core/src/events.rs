//! The events dialect: AG-UI events from an agent, repaired to the contract.
//!
//! An agent that already speaks AG-UI is put through the same framing core as
//! crumbs and chunks (docs/events-dialect.md has the rules).

use crate::error::CrumbError;
use crate::event::Fields;
use crate::fields::{self, Input, Kind, Kinds, parse_fields};
use crate::framing::{Framer, HashSet, IdKind};
use crate::json::{self, Map, Value};
use crate::patch;
use crate::stream::{Dialect, FastText, framer_field};
use crate::table;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    RunStarted,
    RunFinished,
    RunError,
    TextStart,
    TextContent,
    TextEnd,
    TextChunk,
    ToolStart,
    ToolArgs,
    ToolEnd,
    ToolChunk,
    ToolResult,
    StateSnapshot,
    StateDelta,
    StepStarted,
    StepFinished,
    Custom,
    ReasoningStart,
    ReasoningMessageStart,
    ReasoningContent,
    ReasoningMessageEnd,
    ReasoningChunk,
    ReasoningEnd,
    ReasoningEncrypted,
    ActivitySnapshot,
    ActivityDelta,
    SubagentStarted,
    SubagentFinished,
    SubagentError,
}

/// A row, its required fields, and every field it reads with its kind (from the field table).
pub type RowSpec = (
    Row,
    &'static [&'static str],
    &'static [(&'static str, Kind)],
);

// Fields a row does not list (timestamp, rawEvent, …) are not read at all.
fn row(event_type: &str) -> Option<RowSpec> {
    entry(event_type).map(|(spec, _)| spec)
}

/// A row whose every field, listed or required, is a string, as a reader
/// that skips the general conversion may take it. `RUN_STARTED` stays general:
/// such a reader applies items to a started run (`Dialect::call_checked`).
pub fn string_row(event_type: &str) -> Option<RowSpec> {
    entry(event_type).and_then(|(spec, strings)| strings.then_some(spec))
}

/// A row's spec from the field table, found while building: one `match` on
/// the event's type per event, not a walk over the table's names.
const fn spec(row: Row, event_type: &str) -> RowSpec {
    match table::row(table::EVENTS, event_type) {
        Some((_, required, kinds)) => (row, required, kinds),
        None => panic!("an event type the field table does not list"),
    }
}

const fn is_string_row((row, required, kinds): RowSpec) -> bool {
    let mut at = 0;
    while at < required.len() {
        if table::kind_in(kinds, required[at]).is_none() {
            return false;
        }
        at += 1;
    }
    all_strings(kinds) && !matches!(row, Row::RunStarted)
}

macro_rules! entries {
    ($($event_type:literal => $row:ident,)*) => {
        /// The row of an event type, and whether it is a string row.
        fn entry(event_type: &str) -> Option<(RowSpec, bool)> {
            Some(match event_type {
                $($event_type => const {
                    let spec = spec(Row::$row, $event_type);
                    (spec, is_string_row(spec))
                },)*
                _ => return None,
            })
        }
    };
}

entries! {
    "RUN_STARTED" => RunStarted,
    "RUN_FINISHED" => RunFinished,
    "RUN_ERROR" => RunError,
    "TEXT_MESSAGE_START" => TextStart,
    "TEXT_MESSAGE_CONTENT" => TextContent,
    "TEXT_MESSAGE_END" => TextEnd,
    "TEXT_MESSAGE_CHUNK" => TextChunk,
    "TOOL_CALL_START" => ToolStart,
    "TOOL_CALL_ARGS" => ToolArgs,
    "TOOL_CALL_END" => ToolEnd,
    "TOOL_CALL_CHUNK" => ToolChunk,
    "TOOL_CALL_RESULT" => ToolResult,
    "STATE_SNAPSHOT" => StateSnapshot,
    "STATE_DELTA" => StateDelta,
    "STEP_STARTED" => StepStarted,
    "STEP_FINISHED" => StepFinished,
    "CUSTOM" => Custom,
    "REASONING_START" => ReasoningStart,
    "REASONING_MESSAGE_START" => ReasoningMessageStart,
    "REASONING_MESSAGE_CONTENT" => ReasoningContent,
    "REASONING_MESSAGE_END" => ReasoningMessageEnd,
    "REASONING_MESSAGE_CHUNK" => ReasoningChunk,
    "REASONING_END" => ReasoningEnd,
    "REASONING_ENCRYPTED_VALUE" => ReasoningEncrypted,
    "ACTIVITY_SNAPSHOT" => ActivitySnapshot,
    "ACTIVITY_DELTA" => ActivityDelta,
    "SUBAGENT_STARTED" => SubagentStarted,
    "SUBAGENT_FINISHED" => SubagentFinished,
    "SUBAGENT_ERROR" => SubagentError,
}

#[derive(Debug)]
pub enum Parsed {
    Row(Row, Fields),
    /// The run state with the patch applied, and the patch.
    Delta(Map<String, Value>, Value),
    Unknown,
}

/// A row's string fields by name: parsed `Fields`, or `Strings` read in place
/// from the item. The string rows' rules read their fields only through this,
/// so both readers apply the same rules.
pub trait Texts {
    fn text(&self, name: &str) -> Option<&str>;
}

impl Texts for Fields {
    fn text(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }
}

/// The most fields a string row lists.
pub const STRING_FIELDS: usize = 6;

const _: () = {
    let mut at = 0;
    while at < table::EVENTS.len() {
        assert!(
            table::EVENTS[at].2.len() <= STRING_FIELDS || !all_strings(table::EVENTS[at].2),
            "a string row lists more fields than `Strings` holds"
        );
        at += 1;
    }
};

const fn all_strings(kinds: &[(&str, Kind)]) -> bool {
    let mut at = 0;
    while at < kinds.len() {
        if !matches!(kinds[at].1, Kind::Str) {
            return false;
        }
        at += 1;
    }
    true
}

/// The fields of an item of a string row (`string_row`), borrowed from the
/// item: by the row's listed fields, the value of each one present.
#[derive(Debug)]
pub struct Strings<'a> {
    kinds: &'static [(&'static str, Kind)],
    values: [Option<&'a str>; STRING_FIELDS],
}

impl<'a> Strings<'a> {
    pub fn new(kinds: &'static [(&'static str, Kind)]) -> Self {
        Self {
            kinds,
            values: [None; STRING_FIELDS],
        }
    }

    /// The value of the row's `at`th listed field.
    pub fn set(&mut self, at: usize, value: &'a str) {
        self.values[at] = Some(value);
    }

    fn to_fields(&self) -> Fields {
        let mut fields = Fields::with_capacity(self.kinds.len());
        for (&(name, _), value) in self.kinds.iter().zip(self.values) {
            if let Some(value) = value {
                fields.insert(name.into(), Value::String(value.to_owned()));
            }
        }
        fields
    }
}

impl Texts for Strings<'_> {
    fn text(&self, name: &str) -> Option<&str> {
        let at = self.kinds.iter().position(|(listed, _)| *listed == name)?;
        self.values[at]
    }
}

fn text<'a>(fields: &'a impl Texts, key: &str) -> &'a str {
    fields.text(key).unwrap_or_default()
}

fn opt_text(fields: &impl Texts, key: &str) -> Option<String> {
    fields.text(key).map(str::to_owned)
}

#[derive(Debug, Clone)]
pub struct Events {
    framer: Framer,
    /// The agent's message id → the id it streams under (`None`: started, no content yet).
    messages: std::collections::HashMap<String, Option<String>, foldhash::fast::RandomState>,
    ended: HashSet<String>,
    /// What the agent's `RUN_FINISHED` left pending, for `snapshot()`.
    interrupts: Vec<Value>,
    /// The agent's reasoning and activity (contract section 8).
    reasoning: crate::reasoning::Repair,
    /// The agent's id of the message streaming now and the framer's
    /// `texts_opened` then: the fast path's check without a lookup.
    streaming: Option<(String, u64)>,
}

/// A `cancelled` outcome is AG-UI 1.0's: a 0.0.x client's schema rejects it,
/// so its run ends as a plain `RUN_FINISHED` (contract section 8).
fn is_cancelled(outcome: &Value) -> bool {
    outcome.get("type").and_then(Value::as_str) == Some("cancelled")
}

/// The interrupts a `RUN_FINISHED` leaves pending: its outcome's, when that is an interrupt.
fn outcome_interrupts(outcome: Option<&Value>) -> Vec<Value> {
    let Some(Value::Object(outcome)) = outcome else {
        return Vec::new();
    };
    match (outcome.get("type"), outcome.get("interrupts")) {
        (Some(Value::String(kind)), Some(Value::Array(interrupts))) if kind == "interrupt" => {
            interrupts.clone()
        }
        _ => Vec::new(),
    }
}

impl Events {
    pub fn new(thread_id: String, run_id: String, state: Map<String, Value>) -> Self {
        Self {
            framer: Framer::new(thread_id, run_id, state, false),
            messages: std::collections::HashMap::default(),
            ended: HashSet::default(),
            interrupts: Vec::new(),
            reasoning: crate::reasoning::Repair::default(),
            streaming: None,
        }
    }

    fn start_text(&mut self, message_id: &str) {
        if self.messages.contains_key(message_id) {
            self.framer.dropped += 1;
        } else {
            self.messages.insert(message_id.to_owned(), None);
        }
    }

    fn content(&mut self, message_id: &str, delta: &str) {
        if self.ended.contains(message_id) {
            self.framer.dropped += 1;
            return;
        }
        if delta.is_empty() {
            if !self.messages.contains_key(message_id) {
                self.messages.insert(message_id.to_owned(), None);
            }
            return;
        }
        let streamed = self.messages.get(message_id).cloned().flatten();
        if streamed.is_none() || streamed != self.framer.text_id {
            // A message the core closed (for a tool call, another message)
            // goes on under a fresh id: ids are never reused in a run.
            let fresh =
                if self.framer.used_ids.contains(message_id) || self.framer.holds(message_id) {
                    self.framer.new_id(IdKind::Message)
                } else {
                    message_id.to_owned()
                };
            self.framer.open_text_as(fresh.clone());
            self.messages.insert(message_id.to_owned(), Some(fresh));
            self.streaming = Some((message_id.to_owned(), self.framer.texts_opened));
        }
        self.framer.text(delta);
    }

    fn end_text(&mut self, message_id: &str) {
        let Some(streamed) = self.messages.get(message_id) else {
            self.framer.dropped += 1;
            return;
        };
        if self.ended.contains(message_id) {
            self.framer.dropped += 1;
            return;
        }
        let open = streamed.is_some() && *streamed == self.framer.text_id;
        self.ended.insert(message_id.to_owned());
        if open {
            self.framer.close_text();
        }
    }

    fn tool_chunk(&mut self, f: &impl Texts) {
        let tool_call_id = match opt_text(f, "toolCallId") {
            None => self.framer.last_open_tool(),
            Some(id) if self.framer.is_known_tool(&id) => Some(id),
            Some(id) => match f.text("toolCallName") {
                Some(name) => {
                    self.framer.tool_start(&id, name);
                    Some(id)
                }
                None => None,
            },
        };
        let Some(tool_call_id) = tool_call_id else {
            self.framer.dropped += 1;
            return;
        };
        self.framer.tool_args(&tool_call_id, text(f, "delta"));
    }
}

impl Events {
    /// A row whose fields the rules read as text (from parsed fields or in
    /// place), to a started run; `false`: a row with other rules, untouched.
    fn apply_texts(&mut self, row: Row, f: &impl Texts) -> bool {
        let (framer, repair) = (&mut self.framer, &mut self.reasoning);
        match row {
            Row::TextStart => self.start_text(text(f, "messageId")),
            Row::TextContent => self.content(text(f, "messageId"), text(f, "delta")),
            Row::TextEnd => self.end_text(text(f, "messageId")),
            Row::TextChunk => match f.text("messageId") {
                None => framer.text(text(f, "delta")),
                Some(message_id) => self.content(message_id, text(f, "delta")),
            },
            Row::ToolStart => {
                framer.tool_start(text(f, "toolCallId"), text(f, "toolCallName"));
            }
            Row::ToolArgs => framer.tool_args(text(f, "toolCallId"), text(f, "delta")),
            Row::ToolEnd => framer.tool_end(text(f, "toolCallId")),
            Row::ToolChunk => self.tool_chunk(f),
            Row::ToolResult => {
                framer.tool_result(text(f, "toolCallId"), text(f, "content").to_owned());
            }
            Row::StepStarted => framer.step_start(text(f, "stepName")),
            Row::StepFinished => framer.step_end(text(f, "stepName")),
            // The rows of contract section 8, repaired by `reasoning::Repair`.
            Row::ReasoningStart => repair.start_span(framer, text(f, "messageId")),
            Row::ReasoningEnd => repair.end_span(framer, text(f, "messageId")),
            Row::ReasoningMessageStart => repair.start(framer, text(f, "messageId")),
            Row::ReasoningContent => {
                repair.content(framer, text(f, "messageId"), text(f, "delta"));
            }
            Row::ReasoningMessageEnd => repair.end(framer, text(f, "messageId")),
            Row::ReasoningChunk => repair.chunk(framer, f.text("messageId"), text(f, "delta")),
            Row::ReasoningEncrypted => repair.encrypted(
                framer,
                text(f, "subtype"),
                text(f, "entityId"),
                text(f, "encryptedValue"),
            ),
            _ => return false,
        }
        true
    }

    /// A string row (`string_row`) read in place by a reader that skips the
    /// general conversion, to a started run: the rules of `apply`.
    pub fn apply_strings(&mut self, row: Row, strings: &Strings<'_>) {
        if !self.apply_texts(row, strings) {
            self.apply(Parsed::Row(row, strings.to_fields()));
        }
    }

    /// The activity rows of contract section 8, repaired by `reasoning::Repair`.
    fn activity_row(&mut self, row: Row, mut f: Fields) {
        let (framer, repair) = (&mut self.framer, &mut self.reasoning);
        let id = text(&f, "messageId").to_owned();
        match row {
            Row::ActivitySnapshot => {
                let content = f.remove("content").unwrap_or(Value::Null);
                let replace = f.remove("replace");
                repair.activity_snapshot(framer, &id, text(&f, "activityType"), content, replace);
            }
            Row::ActivityDelta => {
                let patch = f.remove("patch").unwrap_or(Value::Null);
                repair.activity_delta(framer, &id, text(&f, "activityType"), &patch);
            }
            _ => {}
        }
    }

    /// What parsing refuses of a row's string fields given the run: a tool
    /// call the thread holds may not be opened again (contract section 6).
    pub fn check_row(
        &self,
        event_type: &str,
        row: Row,
        fields: &impl Texts,
    ) -> Result<(), CrumbError> {
        // A field of a string kind is a string once parsed, or absent.
        let opens = row == Row::ToolStart
            || (row == Row::ToolChunk && fields.text("toolCallName").is_some());
        if opens && let Some(id) = fields.text("toolCallId") {
            self.framer.check_fresh(event_type, "toolCallId", id)?;
        }
        if row == Row::ReasoningEncrypted {
            crate::reasoning::check_subtype(event_type, fields.text("subtype"))?;
        }
        Ok(())
    }
}

impl Dialect for Events {
    type Parsed = Parsed;

    framer_field!();

    fn parse(&self, input: Input) -> Result<Parsed, CrumbError> {
        let (event_type, mut entries) = fields::typed_dict(input, "event")?;
        let Some((row, required, kinds)) = row(&event_type) else {
            return Ok(Parsed::Unknown);
        };
        let fields = parse_fields(
            &event_type,
            &mut entries,
            required,
            Kinds::Only(kinds),
            false,
        )?;
        if row == Row::StateDelta {
            // Applied to a copy here, so a patch that fails changes nothing.
            let (state, delta) =
                patch::apply_patch(&event_type, &self.framer.state, fields.get("delta"))?;
            return Ok(Parsed::Delta(state, delta));
        }
        if row == Row::SubagentFinished {
            crate::subagents::check_outcome(&event_type, fields.get("outcome"))?;
        }
        self.check_row(&event_type, row, &fields)?;
        Ok(Parsed::Row(row, fields))
    }

    fn apply(&mut self, parsed: Parsed) {
        let (row, mut f) = match parsed {
            Parsed::Row(Row::RunStarted, f) => {
                if self.framer.started {
                    self.framer.dropped += 1;
                } else {
                    self.framer
                        .start(opt_text(&f, "threadId"), opt_text(&f, "runId"));
                }
                return;
            }
            Parsed::Delta(state, delta) => {
                if !self.framer.started {
                    self.framer.start(None, None);
                }
                // An empty patch changes nothing and says nothing, like an empty text delta.
                if delta.as_array().is_some_and(|ops| !ops.is_empty()) {
                    self.framer.state_delta(state, delta);
                }
                return;
            }
            Parsed::Row(row, f) => (row, f),
            Parsed::Unknown => {
                if !self.framer.started {
                    self.framer.start(None, None);
                }
                self.framer.ignored += 1;
                return;
            }
        };
        if !self.framer.started {
            self.framer.start(None, None);
        }
        if self.apply_texts(row, &f) {
            return;
        }
        match row {
            Row::RunFinished => {
                if let Some(usage) = f.get("usage") {
                    self.framer.usage.add_all(usage);
                }
                let result = f.remove("result");
                let outcome = f
                    .remove("outcome")
                    .filter(|outcome| self.framer.protocol_v1 || !is_cancelled(outcome));
                self.interrupts = outcome_interrupts(outcome.as_ref());
                self.framer.run_finished(result, outcome);
            }
            Row::RunError => {
                if let Some(usage) = f.get("usage") {
                    self.framer.usage.add_all(usage);
                }
                let code = opt_text(&f, "code");
                self.framer.run_error(text(&f, "message"), code.as_deref());
            }
            Row::StateSnapshot => {
                if let Some(Value::Object(snapshot)) = f.remove("snapshot") {
                    self.framer.snapshot(snapshot);
                }
            }
            Row::SubagentStarted => {
                // The parent message under the id the run streamed it as, if it did.
                let parent = f
                    .get("parentMessageId")
                    .and_then(Value::as_str)
                    .and_then(|id| self.messages.get(id).cloned().flatten());
                crate::subagents::start(&mut self.framer, &f, parent);
            }
            Row::SubagentFinished => crate::subagents::finished(&mut self.framer, &mut f),
            Row::SubagentError => crate::subagents::error(&mut self.framer, &f),
            Row::Custom => match f.remove("value") {
                // The schema requires a value and a top-level null is never written
                // (a NaN value is null once normal).
                None | Some(Value::Null) => self.framer.dropped += 1,
                Some(value) => self.framer.custom(text(&f, "name"), value),
            },
            Row::ActivitySnapshot | Row::ActivityDelta => self.activity_row(row, f),
            // Taken before this match (run start, state delta) or by `apply_texts`.
            _ => {}
        }
    }

    /// A content delta for the message streaming now: what `content` does to it, and nothing else.
    fn fast_message_text(&mut self, message_id: &str, delta: &str) -> FastText {
        let framer = &mut self.framer;
        if framer.finished {
            framer.dropped += 1;
            return FastText::Nothing;
        }
        // An empty delta may start the message's record: `content` decides that.
        if !framer.started || delta.is_empty() || framer.coalesce_bytes > 0 {
            return FastText::General;
        }
        // Streaming now means not ended: `end_text` closes the message it ends.
        // The message `content` opened last, if the framer has not opened another since.
        match &self.streaming {
            Some((streaming, opened))
                if *opened == framer.texts_opened
                    && framer.text_id.is_some()
                    && json::same_text(streaming, message_id) =>
            {
                FastText::Content
            }
            _ => FastText::General,
        }
    }

    fn finish_run(&mut self) {
        self.framer.run_finished(None, None);
    }

    fn pending_interrupts(&self) -> Vec<Value> {
        self.interrupts.clone()
    }

    fn fail_run(&mut self, message: &str, code: &str) {
        self.framer.run_error(message, Some(code));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every string row read in place (`Strings`, `apply_strings`) makes the
    /// events the general path makes of the same item, and refuses what it refuses.
    #[test]
    fn string_rows_in_place_as_parsed() {
        let items = [
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "STEP_STARTED", "stepName": "s"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "a"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}),
            json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "b"}),
            json!({"type": "TOOL_CALL_END", "toolCallId": "c"}),
            json!({"type": "TOOL_CALL_RESULT", "toolCallId": "c", "content": "ok", "role": "tool"}),
            json!({"type": "TOOL_CALL_CHUNK", "toolCallId": "d", "toolCallName": "g", "delta": "{"}),
            json!({"type": "TOOL_CALL_CHUNK", "delta": "}"}),
            json!({"type": "TEXT_MESSAGE_CHUNK", "delta": "c"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
            json!({"type": "REASONING_START", "messageId": "r1"}),
            json!({"type": "REASONING_MESSAGE_START", "messageId": "r1"}),
            json!({"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "x"}),
            json!({"type": "REASONING_MESSAGE_CHUNK", "delta": "y"}),
            json!({"type": "REASONING_MESSAGE_END", "messageId": "r1"}),
            json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message",
                   "entityId": "r1", "encryptedValue": "e"}),
            json!({"type": "REASONING_ENCRYPTED_VALUE", "subtype": "other",
                   "entityId": "r1", "encryptedValue": "e"}),
            json!({"type": "REASONING_END", "messageId": "r1"}),
            json!({"type": "SUBAGENT_STARTED", "subagentRunId": "a", "name": "critic"}),
            json!({"type": "SUBAGENT_ERROR", "subagentRunId": "a", "message": "no"}),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f"}),
            json!({"type": "STEP_FINISHED", "stepName": "s"}),
        ];
        let mut general = Events::new("t".into(), "r".into(), Map::new());
        let mut in_place = general.clone();
        let mut read = 0;
        for item in items {
            let expected = general.call(Input::from_json(&item));
            let event_type = item["type"].as_str().unwrap_or_default();
            let got = match string_row(event_type) {
                Some((row, _, kinds)) if in_place.framer.started => {
                    read += 1;
                    let mut strings = Strings::new(kinds);
                    for (at, (name, _)) in kinds.iter().enumerate() {
                        if let Some(value) = item.get(*name).and_then(Value::as_str) {
                            strings.set(at, value);
                        }
                    }
                    in_place.check_row(event_type, row, &strings).map(|()| {
                        in_place.call_checked(|events| events.apply_strings(row, &strings));
                        in_place.framer.take_out()
                    })
                }
                _ => in_place.call(Input::from_json(&item)),
            };
            assert_eq!(got, expected, "{item}");
        }
        assert_eq!(read, 25);
    }
}
