//! AG-UI 1.0 subagents in the events dialect (docs/events-dialect.md, "Subagents").
//!
//! The rules `@ag-ui/client` 1.0.0's verifier holds a stream to: a subagent id
//! starts once per run, a parent must have started in the run, FINISHED and
//! ERROR need an open id, and no subagent is open at the run's end. A client
//! that did not declare 1.0 reads a subagent as the step `subagent_{id}`, the
//! crumbs' mapping (contract section 3), and nothing else of it: its schema
//! has no `SUBAGENT_*` and the thread's state must not depend on who reads.
//! The pure build's twin is `pure/subagents.py`.

use crate::error::CrumbError;
use crate::event::Fields;
use crate::framing::{Event, Framer, HashSet, event};
use crate::json::{Map, Value};

/// The run's subagents, on the framer: its terminal events close the open ones.
#[derive(Debug, Clone, Default)]
pub struct Subagents {
    /// The open ones in order of starting, with the `SUBAGENT_STARTED` a 1.0 client got.
    open: indexmap::IndexMap<String, Option<Event>, foldhash::fast::RandomState>,
    /// Every id the run started.
    started: HashSet<String>,
}

fn step_name(subagent_id: &str) -> String {
    format!("subagent_{subagent_id}")
}

fn text<'a>(f: &'a Fields, key: &str) -> Option<&'a str> {
    f.get(key).and_then(Value::as_str)
}

/// A `SUBAGENT_FINISHED` outcome the 1.0 schema knows, or the error naming the field.
pub fn check_outcome(item_type: &str, outcome: Option<&Value>) -> Result<(), CrumbError> {
    let Some(Value::Object(outcome)) = outcome else {
        return Ok(());
    };
    let kind = outcome.get("type").and_then(Value::as_str);
    if !matches!(kind, Some("success" | "suspended")) {
        return Err(CrumbError::new(format!(
            "{item_type}: 'outcome.type' must be \"success\" or \"suspended\""
        )));
    }
    match outcome.get("interruptIds") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::Array(ids)) if ids.iter().all(Value::is_string) => Ok(()),
        Some(_) => Err(CrumbError::new(format!(
            "{item_type}: 'outcome.interruptIds' must be an array of strings"
        ))),
    }
}

/// `SUBAGENT_STARTED`: a repeated id is dropped; a parent subagent or tool call
/// this run never started, and a message it never streamed, are left out.
pub fn start(framer: &mut Framer, f: &Fields, parent_message_id: Option<String>) {
    let subagent_id = text(f, "subagentRunId").unwrap_or_default().to_owned();
    if framer.subagents.started.contains(&subagent_id) {
        framer.dropped += 1;
        return;
    }
    framer.subagents.started.insert(subagent_id.clone());
    if !framer.protocol_v1 {
        framer.subagents.open.insert(subagent_id.clone(), None);
        framer.step_start(&step_name(&subagent_id));
        return;
    }
    let mut started = event("SUBAGENT_STARTED");
    started.put("subagentRunId", subagent_id.as_str());
    started.put("name", text(f, "name").unwrap_or_default());
    if let Some(description) = text(f, "description") {
        started.put("description", description);
    }
    if let Some(parent) = text(f, "parentSubagentRunId")
        && parent != subagent_id
        && framer.subagents.started.contains(parent)
    {
        started.put("parentSubagentRunId", parent);
    }
    if let Some(tool_call_id) = text(f, "parentToolCallId")
        && framer.is_known_tool(tool_call_id)
    {
        started.put("parentToolCallId", tool_call_id);
    }
    if let Some(message_id) = parent_message_id {
        started.put("parentMessageId", message_id);
    }
    // Kept for a joining reader (`opening`).
    framer
        .subagents
        .open
        .insert(subagent_id, Some(started.clone()));
    framer.emit(started);
}

/// `SUBAGENT_FINISHED` {result?, outcome?} of an open subagent, else dropped.
pub fn finished(framer: &mut Framer, f: &mut Fields) {
    let subagent_id = text(f, "subagentRunId").unwrap_or_default().to_owned();
    if !end(framer, &subagent_id) {
        return;
    }
    let mut done = event("SUBAGENT_FINISHED");
    done.put("subagentRunId", subagent_id);
    if let Some(result) = f.remove("result").filter(|value| !value.is_null()) {
        done.put("result", result);
    }
    if let Some(Value::Object(outcome)) = f.remove("outcome") {
        // Only the schema's members, as `STATE_DELTA`'s operations are sent.
        let kind = outcome.get("type").cloned().unwrap_or(Value::Null);
        let suspended = kind.as_str() == Some("suspended");
        let mut reduced = Map::new();
        reduced.insert("type".to_owned(), kind);
        if suspended && let Some(ids @ Value::Array(_)) = outcome.get("interruptIds") {
            reduced.insert("interruptIds".to_owned(), ids.clone());
        }
        done.put("outcome", Value::Object(reduced));
    }
    framer.emit(done);
}

/// `SUBAGENT_ERROR` {message, code?} of an open subagent, else dropped.
pub fn error(framer: &mut Framer, f: &Fields) {
    let subagent_id = text(f, "subagentRunId").unwrap_or_default().to_owned();
    if end(framer, &subagent_id) {
        let message = text(f, "message").unwrap_or_default();
        framer.emit(error_event(subagent_id, message, text(f, "code")));
    }
}

/// Closes an open subagent: true when a 1.0 client is to be told how it ended.
fn end(framer: &mut Framer, subagent_id: &str) -> bool {
    if framer.subagents.open.shift_remove(subagent_id).is_none() {
        framer.dropped += 1;
        return false;
    }
    if framer.protocol_v1 {
        return true;
    }
    framer.step_end(&step_name(subagent_id));
    false
}

fn error_event(subagent_id: String, message: &str, code: Option<&str>) -> Event {
    let mut failed = event("SUBAGENT_ERROR");
    failed.put("subagentRunId", subagent_id);
    failed.put("message", message);
    if let Some(code) = code {
        failed.put("code", code);
    }
    failed
}

/// Before the terminal event (after rule 3's closers, which end a 0.0.x
/// client's subagent steps): the open subagents, the latest started first,
/// FINISHED before `RUN_FINISHED`, ERROR with the run's message before `RUN_ERROR`.
pub fn close_open(framer: &mut Framer, error: Option<(&str, Option<&str>)>) {
    if framer.subagents.open.is_empty() {
        return;
    }
    let open = std::mem::take(&mut framer.subagents.open);
    if !framer.protocol_v1 {
        return;
    }
    for subagent_id in open.into_keys().rev() {
        let closer = match error {
            None => {
                let mut done = event("SUBAGENT_FINISHED");
                done.put("subagentRunId", subagent_id);
                done
            }
            Some((message, code)) => error_event(subagent_id, message, code),
        };
        framer.emit(closer);
    }
}

/// The `SUBAGENT_STARTED` of each open subagent, for a reader joining now.
pub fn opening(framer: &Framer) -> Vec<Value> {
    framer
        .subagents
        .open
        .values()
        .flatten()
        .map(Event::to_value)
        .collect()
}
