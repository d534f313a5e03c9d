//! The chunks dialect (contract section 4, seed 001).

use std::borrow::Cow;

use crate::error::CrumbError;
use crate::event::Fields;
use crate::fields::{self, Input, Kind, Kinds, parse_fields};
use crate::framing::{Framer, IdKind};
use crate::json::{Map, Value, compact};
use crate::stream::{Dialect, framer_field};
use crate::table;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    Token,
    ToolCall,
    ToolResult,
    PlanUpdate,
    Interrupt,
    Done,
    Reasoning,
}

/// A row, its required fields and the kinds of its typed fields (from the field table).
type RowSpec = (
    Row,
    &'static [&'static str],
    &'static [(&'static str, Kind)],
);

// Chunks type only the fields of their own row; everything else is a JSON value.
fn row(chunk_type: &str) -> Option<RowSpec> {
    let (_, required, kinds) = table::row(table::CHUNKS, chunk_type)?;
    let row = match chunk_type {
        "token" | "chunk" => Row::Token,
        "tool_call" => Row::ToolCall,
        "tool_result" => Row::ToolResult,
        "plan_update" => Row::PlanUpdate,
        "interrupt" => Row::Interrupt,
        "done" => Row::Done,
        "reasoning" => Row::Reasoning,
        _ => return None,
    };
    Some((row, required, kinds))
}

/// A frequent chunk read straight from the caller's dict, its fields borrowed.
///
/// The reader guarantees what `parse` would have checked: only these fields
/// besides `type`, each well typed and JSON, so applying it is the same as
/// applying the parsed chunk.
#[derive(Debug)]
pub enum Hot<'a> {
    /// `args` is the compact JSON of the input, `{}` if absent.
    ToolCall {
        id: Option<&'a str>,
        name: &'a str,
        args: &'a str,
    },
    /// `content` is the output if a string, else its compact JSON.
    ToolResult { id: &'a str, content: String },
}

#[derive(Debug)]
pub enum Parsed {
    Text(String),
    Ignored,
    Object(Fields),
    Custom(String, Fields),
    Row(Row, Fields),
}

#[derive(Debug, Clone)]
pub struct Chunks {
    framer: Framer,
    custom_prefix: String,
    /// One pending interrupt per `interrupt` chunk, for `snapshot()`.
    interrupts: Vec<Value>,
}

/// The pending interrupt an `interrupt` chunk's CUSTOM value stands for; the
/// value always names its id (`interruptId`, else `id`: see `apply`).
fn pending_interrupt(value: &Map<String, Value>) -> Value {
    let named = |key: &str| match value.get(key) {
        Some(Value::String(id)) if !id.is_empty() => Some(id.clone()),
        _ => None,
    };
    let id = named("interruptId")
        .or_else(|| named("id"))
        .unwrap_or_default();
    let reason = match value.get("reason") {
        Some(Value::String(reason)) => reason.clone(),
        _ => "interrupt".to_owned(),
    };
    let mut interrupt = Map::new();
    interrupt.insert("id".to_owned(), id.into());
    interrupt.insert("reason".to_owned(), reason.into());
    if let Some(message @ Value::String(_)) = value.get("message") {
        interrupt.insert("message".to_owned(), message.clone());
    }
    interrupt.insert("payload".to_owned(), Value::Object(value.clone()));
    Value::Object(interrupt)
}

impl Chunks {
    pub fn new(
        thread_id: String,
        run_id: String,
        state: Map<String, Value>,
        custom_prefix: String,
    ) -> Self {
        Self {
            framer: Framer::new(thread_id, run_id, state, true),
            custom_prefix,
            interrupts: Vec::new(),
        }
    }

    /// A `tool_call`; `args` is the compact JSON of its input, `{}` if absent or `None`.
    fn tool_call(&mut self, id: Option<&str>, name: &str, args: &str) {
        let generated;
        let tool_call_id = if let Some(id) = id {
            id
        } else {
            generated = self.framer.new_id(IdKind::Tool);
            &generated
        };
        if self.framer.tool_start(tool_call_id, name) {
            self.framer.tool_args(tool_call_id, args);
            self.framer.tool_end(tool_call_id);
        }
    }

    /// What `parse` checks of a frequent chunk that depends on the run: a
    /// tool call's own id is new to the thread.
    pub fn check_hot(&self, hot: &Hot<'_>) -> Result<(), CrumbError> {
        match hot {
            // Input after the end is dropped, never refused (rule 2).
            Hot::ToolCall { id: Some(id), .. } if !self.framer.finished => {
                self.framer.check_fresh("tool_call", "id", id)
            }
            _ => Ok(()),
        }
    }

    /// Applies a frequent chunk the glue read and checked itself (see [`Hot`]).
    pub fn apply_hot(&mut self, hot: Hot<'_>) {
        match hot {
            Hot::ToolCall { id, name, args } => self.tool_call(id, name, args),
            Hot::ToolResult { id, content } => self.framer.tool_result(id, content),
        }
    }

    fn done(&mut self, output: Option<Value>) {
        let error = match &output {
            Some(Value::Object(map)) => map.get("error").filter(|error| !error.is_null()),
            _ => None,
        };
        let Some(error) = error else {
            self.framer.run_finished(output, None);
            return;
        };
        let message = match error {
            Value::String(message) => message.clone(),
            Value::Object(map) if map.get("message").is_some_and(Value::is_string) => {
                map["message"].as_str().unwrap_or_default().to_owned()
            }
            other => compact(other),
        };
        let code = error
            .get("code")
            .filter(|_| error.is_object())
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.framer.run_error(&message, code.as_deref());
    }
}

impl Dialect for Chunks {
    type Parsed = Parsed;

    framer_field!();

    fn parse(&self, input: Input) -> Result<Parsed, CrumbError> {
        let mut entries = match input {
            Input::Str {
                text: Some(text), ..
            } => return Ok(Parsed::Text(text)),
            Input::Str { text: None, .. } => {
                return Err(CrumbError::new("token: 'content' must be a JSON value"));
            }
            Input::Other { .. } => return Ok(Parsed::Ignored),
            Input::Dict(entries) => entries,
        };
        let Some(chunk_type) = fields::take_type(&mut entries) else {
            let fields = parse_fields("chunk", &mut entries, &[], Kinds::Listed(&[]), true)?;
            return Ok(Parsed::Object(fields));
        };
        let Some((row, required, kinds)) = row(&chunk_type) else {
            let fields = parse_fields(&chunk_type, &mut entries, &[], Kinds::Listed(&[]), true)?;
            if chunk_type.starts_with("subagent.") {
                return Ok(Parsed::Custom(chunk_type, fields));
            }
            return Ok(Parsed::Object(fields));
        };
        let kinds = Kinds::Listed(kinds);
        let fields = parse_fields(&chunk_type, &mut entries, required, kinds, true)?;
        if row == Row::ToolCall
            && let Some(id) = fields.get("id").and_then(Value::as_str)
        {
            self.framer.check_fresh(&chunk_type, "id", id)?;
        }
        Ok(Parsed::Row(row, fields))
    }

    fn apply(&mut self, parsed: Parsed) {
        if !self.framer.started {
            self.framer.start(None, None);
        }
        let (row, mut f) = match parsed {
            Parsed::Text(text) => return self.framer.text(&text),
            Parsed::Ignored => {
                self.framer.ignored += 1;
                return;
            }
            Parsed::Object(fields) => return self.framer.snapshot(fields),
            Parsed::Custom(chunk_type, fields) => {
                let name = format!("{}.{chunk_type}", self.custom_prefix);
                return self.framer.custom(&name, Value::Object(fields.into_map()));
            }
            Parsed::Row(row, fields) => (row, fields),
        };
        match row {
            Row::Token => {
                let content = f.get("content").and_then(Value::as_str).unwrap_or_default();
                self.framer.text(content);
            }
            Row::ToolCall => {
                let id = f.get("id").and_then(Value::as_str);
                let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = match f.get("input") {
                    None | Some(Value::Null) => "{}".to_owned(),
                    Some(input) => compact(input),
                };
                self.tool_call(id, name, &args);
            }
            Row::ToolResult => {
                let content = match f.get("output") {
                    Some(Value::String(output)) => output.clone(),
                    Some(output) => compact(output),
                    None => "null".to_owned(),
                };
                let id = f.get("id").and_then(Value::as_str).unwrap_or_default();
                self.framer.tool_result(id, content);
            }
            Row::PlanUpdate => {
                let plan = f.remove("plan").unwrap_or(Value::Null);
                let mut update = Map::new();
                update.insert("plan".to_owned(), plan);
                self.framer.snapshot(update);
            }
            Row::Interrupt => {
                // The id a resume names must be on the wire: one the chunk
                // carries, else one generated here.
                let named =
                    |key: &str| matches!(f.get(key), Some(Value::String(id)) if !id.is_empty());
                if !named("interruptId") && !named("id") {
                    f.remove("interruptId");
                    let id = self.framer.new_id(IdKind::Interrupt);
                    f.insert(Cow::Borrowed("interruptId"), Value::String(id));
                }
                let value = f.into_map();
                self.interrupts.push(pending_interrupt(&value));
                self.framer.custom("on_interrupt", Value::Object(value));
            }
            Row::Done => {
                let output = f.remove("output");
                self.done(output);
            }
            Row::Reasoning => {
                let content = f.get("content").and_then(Value::as_str).unwrap_or_default();
                self.framer.reasoning(content);
            }
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

    fn run(chunks: &[Value]) -> Vec<Value> {
        let mut translator = Chunks::new("t".into(), "r".into(), Map::new(), "dawn".into());
        let mut events = Vec::new();
        for chunk in chunks {
            let out = translator.call(Input::from_json(chunk)).unwrap();
            events.extend(out.iter().map(crate::event::Event::to_value));
        }
        events
    }

    #[test]
    fn text_closes_before_any_other_event() {
        let events = run(&[json!("hi"), json!({"type": "plan_update", "plan": [1]})]);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "RUN_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "STATE_SNAPSHOT"
            ]
        );
    }

    #[test]
    fn tool_call_without_id_gets_one() {
        let events = run(&[json!({"type": "tool_call", "name": "f"})]);
        assert_eq!(events[1]["toolCallId"], "r:t1");
        assert_eq!(events[2]["delta"], "{}");
    }

    #[test]
    fn done_with_an_error_is_a_run_error() {
        let events =
            run(&[json!({"type": "done", "output": {"error": {"message": "m", "code": 3}}})]);
        assert_eq!(events[1], json!({"type": "RUN_ERROR", "message": "m"}));
        let events = run(&[json!({"type": "done", "output": {"error": [1]}})]);
        assert_eq!(events[1]["message"], "[1]");
    }

    #[test]
    fn custom_names_use_the_prefix() {
        let events = run(&[json!({"type": "subagent.spawn", "a": null})]);
        assert_eq!(
            events[1],
            json!({"type": "CUSTOM", "name": "dawn.subagent.spawn", "value": {"a": null}})
        );
    }
}
