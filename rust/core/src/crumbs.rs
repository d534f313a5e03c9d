//! The crumbs dialect (contract section 3, seed 000).

use crate::error::CrumbError;
use crate::event::Fields;
use crate::fields::{self, Input, Kinds, check_error_object, parse_fields};
use crate::framing::{Framer, HashSet, IdKind};
use crate::json::{Map, Value, compact};
use crate::stream::{Dialect, framer_field};
use crate::table;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    RunStart,
    Text,
    File,
    InputStart,
    InputDelta,
    InputEnd,
    Call,
    Result,
    Error,
    RunEnd,
    AgentError,
    Human,
    StepStart,
    StepEnd,
    SubagentStart,
    SubagentEnd,
    TaskStart,
    TaskEnd,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningEncrypted,
}

fn known(crumb_type: &str) -> Option<(Known, &'static [&'static str])> {
    let (_, required, _) = table::row(table::CRUMBS, crumb_type)?;
    let known = match crumb_type {
        "agent:run:start" => Known::RunStart,
        "text:delta" => Known::Text,
        "file:generated" => Known::File,
        "tool:input:start" => Known::InputStart,
        "tool:input:delta" => Known::InputDelta,
        "tool:input:end" => Known::InputEnd,
        "tool:call" => Known::Call,
        "tool:result" => Known::Result,
        "tool:error" => Known::Error,
        "agent:run:end" => Known::RunEnd,
        "agent:error" => Known::AgentError,
        "human:required" => Known::Human,
        "pipeline:step:start" => Known::StepStart,
        "pipeline:step:end" => Known::StepEnd,
        "subagent:run:start" => Known::SubagentStart,
        "subagent:run:end" => Known::SubagentEnd,
        "task:start" => Known::TaskStart,
        "task:end" => Known::TaskEnd,
        "reasoning:delta" => Known::ReasoningDelta,
        "reasoning:end" => Known::ReasoningEnd,
        "reasoning:encrypted" => Known::ReasoningEncrypted,
        _ => return None,
    };
    Some((known, required))
}

/// The agent-supplied id that opens something (contract section 6); a result
/// may still answer a call the thread holds (rule 6 drops it in this run).
fn fresh_field(kind: Known) -> Option<&'static str> {
    match kind {
        Known::InputStart | Known::Call => Some("toolCallId"),
        Known::Human => Some("interruptId"),
        _ => None,
    }
}

const LOOP_OWN_FIELDS: [&str; 4] = ["type", "loopId", "phase", "iteration"];

/// A frequent crumb read straight from the caller's dict, its fields borrowed.
///
/// The reader guarantees what `parse` would have checked: the item has exactly
/// these fields besides `type`, every one present, not null and well typed, so
/// applying it is the same as applying the parsed crumb.
#[derive(Debug)]
pub enum Hot<'a> {
    InputStart {
        tool_call_id: &'a str,
        tool_name: &'a str,
    },
    InputEnd {
        tool_call_id: &'a str,
    },
    /// `args` is the compact JSON of the input.
    Call {
        tool_call_id: &'a str,
        tool_name: &'a str,
        args: &'a str,
    },
    /// `content` is the result if a string, else its compact JSON.
    Result {
        tool_call_id: &'a str,
        content: String,
    },
    StepStart {
        step_name: &'a str,
    },
    StepEnd {
        step_name: &'a str,
    },
}

#[derive(Debug)]
pub enum Parsed {
    Known(Known, Fields),
    Loop(String, Fields),
    Unknown,
}

/// A file reference: string `uri` and `mimeType`, optional string `name`, nothing else.
pub fn is_file_reference(value: &Value) -> bool {
    let Value::Object(map) = value else {
        return false;
    };
    matches!(map.get("uri"), Some(Value::String(_)))
        && matches!(map.get("mimeType"), Some(Value::String(_)))
        && map.get("name").is_none_or(Value::is_string)
        && map
            .keys()
            .all(|key| matches!(key.as_str(), "uri" | "mimeType" | "name"))
}

fn file_value(uri: &Value, mime_type: &Value, name: Option<&Value>) -> Value {
    let mut value = Map::new();
    value.insert("uri".to_owned(), uri.clone());
    value.insert("mimeType".to_owned(), mime_type.clone());
    if let Some(name) = name.filter(|name| !name.is_null()) {
        value.insert("name".to_owned(), name.clone());
    }
    Value::Object(value)
}

fn text<'a>(fields: &'a Fields, key: &str) -> &'a str {
    fields.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn opt_text(fields: &Fields, key: &str) -> Option<String> {
    fields.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[derive(Debug, Clone)]
pub struct Crumbs {
    framer: Framer,
    streamed: HashSet<String>,
    interrupts: Vec<Map<String, Value>>,
    interrupt_ids: HashSet<String>,
    files: HashSet<String>,
    current_loop: Option<Map<String, Value>>,
}

impl Crumbs {
    pub fn new(thread_id: String, run_id: String, state: Map<String, Value>) -> Self {
        Self {
            framer: Framer::new(thread_id, run_id, state, false),
            streamed: HashSet::default(),
            interrupts: Vec::new(),
            interrupt_ids: HashSet::default(),
            files: HashSet::default(),
            current_loop: None,
        }
    }

    /// The interrupts recorded by human:required so far.
    pub fn interrupts(&self) -> &[Map<String, Value>] {
        &self.interrupts
    }

    fn announce(&mut self, value: Value) {
        let uri = value["uri"].as_str().unwrap_or_default().to_owned();
        if !self.files.insert(uri) {
            self.framer.dropped += 1;
            return;
        }
        self.framer.custom("FILE_GENERATED", value);
    }

    fn input_start(&mut self, tool_call_id: &str, tool_name: &str) {
        if self.framer.tool_start(tool_call_id, tool_name) {
            self.streamed.insert(tool_call_id.to_owned());
        }
    }

    /// A `tool:call`; `args` is the compact JSON of its input.
    fn call_tool(&mut self, tool_call_id: &str, tool_name: &str, args: &str) {
        if self.streamed.contains(tool_call_id) {
            return;
        }
        if self.framer.tool_start(tool_call_id, tool_name) {
            self.framer.tool_args(tool_call_id, args);
            self.framer.tool_end(tool_call_id);
        }
    }

    /// What `parse` checks of a frequent crumb that depends on the run: an id
    /// that opens a tool call is new to the thread.
    pub fn check_hot(&self, hot: &Hot<'_>) -> Result<(), CrumbError> {
        // Input after the end is dropped, never refused (rule 2).
        if self.framer.finished {
            return Ok(());
        }
        match hot {
            Hot::InputStart { tool_call_id, .. } => {
                self.framer
                    .check_fresh("tool:input:start", "toolCallId", tool_call_id)
            }
            Hot::Call { tool_call_id, .. } => {
                self.framer
                    .check_fresh("tool:call", "toolCallId", tool_call_id)
            }
            _ => Ok(()),
        }
    }

    /// Applies a frequent crumb the glue read and checked itself (see [`Hot`]).
    pub fn apply_hot(&mut self, hot: Hot<'_>) {
        match hot {
            Hot::InputStart {
                tool_call_id,
                tool_name,
            } => self.input_start(tool_call_id, tool_name),
            Hot::InputEnd { tool_call_id } => self.framer.tool_end(tool_call_id),
            Hot::Call {
                tool_call_id,
                tool_name,
                args,
            } => self.call_tool(tool_call_id, tool_name, args),
            Hot::Result {
                tool_call_id,
                content,
            } => self.framer.tool_result(tool_call_id, content),
            Hot::StepStart { step_name } => self.framer.step_start(step_name),
            Hot::StepEnd { step_name } => self.framer.step_end(step_name),
        }
    }

    fn run_end(&mut self, f: &Fields) {
        let result = f.get("result").cloned();
        self.framer.close_all();
        if let Some(result) = &result {
            let announced = result
                .get("uri")
                .and_then(Value::as_str)
                .is_some_and(|uri| self.files.contains(uri));
            if is_file_reference(result) && !announced {
                let Value::Object(map) = result else {
                    unreachable!()
                };
                self.announce(file_value(&map["uri"], &map["mimeType"], map.get("name")));
            }
        }
        let outcome = (!self.interrupts.is_empty()).then(|| {
            let mut outcome = Map::new();
            outcome.insert("type".to_owned(), "interrupt".into());
            let list = self.interrupts.iter().cloned().map(Value::Object).collect();
            outcome.insert("interrupts".to_owned(), Value::Array(list));
            Value::Object(outcome)
        });
        self.framer.run_finished(result, outcome);
    }

    fn human(&mut self, f: &Fields) {
        let interrupt_id = match opt_text(f, "interruptId") {
            Some(id) if self.interrupt_ids.contains(&id) => {
                self.framer.dropped += 1;
                return;
            }
            Some(id) => {
                self.framer.used_ids.insert(id.clone());
                id
            }
            None => self.framer.new_id(IdKind::Interrupt),
        };
        self.interrupt_ids.insert(interrupt_id.clone());
        let mut interrupt = Map::new();
        interrupt.insert("id".to_owned(), interrupt_id.into());
        let reason = f
            .get("reason")
            .cloned()
            .unwrap_or_else(|| "human_required".into());
        interrupt.insert("reason".to_owned(), reason);
        for key in ["message", "toolCallId", "responseSchema"] {
            if let Some(value) = f.get(key) {
                interrupt.insert(key.to_owned(), value.clone());
            }
        }
        self.interrupts.push(interrupt);
        self.framer.close_text();
    }

    fn step_then_snapshot(&mut self, name: &str, starting: bool, key: &str, value: Value) {
        if starting {
            self.framer.step_start(name);
        } else {
            self.framer.step_end(name);
        }
        let mut update = Map::new();
        update.insert(key.to_owned(), value);
        self.framer.snapshot(update);
    }

    fn status(f: &Fields, starting: bool) -> Value {
        f.get("status")
            .cloned()
            .unwrap_or_else(|| if starting { "running" } else { "completed" }.into())
    }

    fn subagent(&mut self, f: &Fields, starting: bool) {
        let name = format!("subagent_{}", text(f, "subagentId"));
        let mut subagent = Map::new();
        subagent.insert("parentAgentId".to_owned(), f["parentAgentId"].clone());
        subagent.insert("subagentId".to_owned(), f["subagentId"].clone());
        subagent.insert("status".to_owned(), Self::status(f, starting));
        if let Some(output) = f.get("output") {
            subagent.insert("output".to_owned(), output.clone());
        }
        self.step_then_snapshot(&name, starting, "subagent", Value::Object(subagent));
    }

    fn task(&mut self, f: &Fields, starting: bool) {
        let name = format!("task_{}", text(f, "taskRunId"));
        let mut task = Map::new();
        task.insert("taskRunId".to_owned(), f["taskRunId"].clone());
        task.insert("taskId".to_owned(), f["taskId"].clone());
        if let Some(model) = f.get("model") {
            task.insert("model".to_owned(), model.clone());
        }
        task.insert("status".to_owned(), Self::status(f, starting));
        for key in ["durationMs", "usage", "error"] {
            if let Some(value) = f.get(key) {
                task.insert(key.to_owned(), value.clone());
            }
        }
        self.step_then_snapshot(&name, starting, "task", Value::Object(task));
    }

    fn loop_crumb(&mut self, phase: &str, f: &Fields) {
        let loop_id = text(f, "loopId").to_owned();
        let mut current = match self.current_loop.take() {
            Some(previous) if previous.get("loopId").and_then(Value::as_str) == Some(&loop_id) => {
                previous
            }
            _ => {
                let mut fresh = Map::new();
                fresh.insert("loopId".to_owned(), loop_id.clone().into());
                fresh.insert("phase".to_owned(), phase.into());
                fresh.insert("iteration".to_owned(), 0.into());
                fresh
            }
        };
        current.insert("phase".to_owned(), phase.into());
        if let Some(iteration) = f.get("iteration") {
            current.insert("iteration".to_owned(), iteration.clone());
        }
        for (key, value) in f.iter() {
            if !LOOP_OWN_FIELDS.contains(&key) {
                current.insert(key.to_owned(), value.clone());
            }
        }
        let step = format!("loop_{loop_id}_{}", current["iteration"]);
        self.current_loop = Some(current.clone());
        match phase {
            "iteration:start" => self.framer.step_start(&step),
            "iteration:end" => self.framer.step_end(&step),
            _ => {}
        }
        let mut update = Map::new();
        update.insert("loop".to_owned(), Value::Object(current));
        self.framer.snapshot(update);
    }
}

impl Dialect for Crumbs {
    type Parsed = Parsed;

    framer_field!();

    fn parse(&self, input: Input) -> Result<Parsed, CrumbError> {
        let (crumb_type, mut entries) = fields::typed_dict(input, "crumb")?;
        let crumb_type = crumb_type.as_str();
        let (parsed_kind, required): (Option<Known>, &[&str]) = match known(crumb_type) {
            Some((kind, required)) => (Some(kind), required),
            None if crumb_type.starts_with("loop:") => (None, table::LOOP_REQUIRED),
            None => return Ok(Parsed::Unknown),
        };
        let fields = parse_fields(crumb_type, &mut entries, required, Kinds::ByName, false)?;
        if let Some(error) = fields.get("error") {
            check_error_object(crumb_type, error)?;
        }
        if parsed_kind == Some(Known::ReasoningEncrypted) {
            crate::reasoning::check_subtype(
                crumb_type,
                fields.get("subtype").and_then(Value::as_str),
            )?;
        }
        if let Some(field) = parsed_kind.and_then(fresh_field)
            && let Some(id) = fields.get(field).and_then(Value::as_str)
        {
            self.framer.check_fresh(crumb_type, field, id)?;
        }
        Ok(match parsed_kind {
            Some(kind) => Parsed::Known(kind, fields),
            None => Parsed::Loop(crumb_type["loop:".len()..].to_owned(), fields),
        })
    }

    fn apply(&mut self, parsed: Parsed) {
        if let Parsed::Known(Known::RunStart, f) = &parsed {
            if self.framer.started {
                self.framer.dropped += 1;
            } else {
                self.framer
                    .start(opt_text(f, "sessionId"), opt_text(f, "runId"));
            }
            return;
        }
        if !self.framer.started {
            self.framer.start(None, None);
        }
        let (kind, f) = match parsed {
            Parsed::Unknown => {
                self.framer.ignored += 1;
                return;
            }
            Parsed::Loop(phase, f) => {
                self.loop_crumb(&phase, &f);
                return;
            }
            Parsed::Known(kind, f) => (kind, f),
        };
        match kind {
            Known::RunStart => {}
            Known::Text => self.framer.text(text(&f, "delta")),
            Known::File => self.announce(file_value(&f["uri"], &f["mimeType"], f.get("name"))),
            Known::InputStart => self.input_start(text(&f, "toolCallId"), text(&f, "toolName")),
            Known::InputDelta => self
                .framer
                .tool_args(text(&f, "toolCallId"), text(&f, "delta")),
            Known::InputEnd => self.framer.tool_end(text(&f, "toolCallId")),
            Known::Call => {
                self.call_tool(
                    text(&f, "toolCallId"),
                    text(&f, "toolName"),
                    &compact(&f["input"]),
                );
            }
            Known::Result => {
                let content = match &f["result"] {
                    Value::String(result) => result.clone(),
                    other => compact(other),
                };
                self.framer.tool_result(text(&f, "toolCallId"), content);
            }
            Known::Error => {
                let error = &f["error"];
                let mut inner = Map::new();
                inner.insert("code".to_owned(), error["code"].clone());
                inner.insert("message".to_owned(), error["message"].clone());
                let mut outer = Map::new();
                outer.insert("error".to_owned(), Value::Object(inner));
                let content = compact(&Value::Object(outer));
                self.framer.tool_result(text(&f, "toolCallId"), content);
            }
            Known::RunEnd => self.run_end(&f),
            Known::AgentError => {
                let code = opt_text(&f, "code");
                self.framer.run_error(text(&f, "message"), code.as_deref());
            }
            Known::Human => self.human(&f),
            Known::StepStart => self.framer.step_start(text(&f, "stepName")),
            Known::StepEnd => self.framer.step_end(text(&f, "stepName")),
            Known::SubagentStart => self.subagent(&f, true),
            Known::SubagentEnd => self.subagent(&f, false),
            Known::TaskStart => self.task(&f, true),
            Known::TaskEnd => {
                if let Some(usage) = f.get("usage") {
                    let model = f.get("model").and_then(Value::as_str);
                    self.framer.usage.add(usage, model);
                }
                self.task(&f, false);
            }
            Known::ReasoningDelta => self.framer.reasoning(text(&f, "delta")),
            Known::ReasoningEnd => self.framer.end_reasoning(),
            Known::ReasoningEncrypted => self.framer.encrypted(
                f.get("subtype")
                    .and_then(Value::as_str)
                    .unwrap_or("message"),
                f.get("entityId").and_then(Value::as_str),
                text(&f, "encryptedValue"),
            ),
        }
    }

    fn finish_run(&mut self) {
        self.run_end(&Fields::default());
    }

    /// Those of `human:required`, which a run that ended in `RUN_ERROR` never offered.
    fn pending_interrupts(&self) -> Vec<Value> {
        if self.framer.errored {
            return Vec::new();
        }
        self.interrupts.iter().cloned().map(Value::Object).collect()
    }

    fn fail_run(&mut self, message: &str, code: &str) {
        self.framer.run_error(message, Some(code));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(crumbs: &[Value]) -> (Crumbs, Vec<Value>) {
        let mut transformer = Crumbs::new("t".into(), "r".into(), Map::new());
        let mut events = Vec::new();
        for crumb in crumbs {
            let out = transformer.call(Input::from_json(crumb)).unwrap();
            events.extend(out.iter().map(crate::event::Event::to_value));
        }
        (transformer, events)
    }

    #[test]
    fn loop_state_accretes_and_names_steps() {
        let (_, events) = run(&[
            json!({"type": "loop:start", "loopId": "L", "goal": "g"}),
            json!({"type": "loop:iteration:start", "loopId": "L", "iteration": 2}),
        ]);
        assert_eq!(events[2]["stepName"], "loop_L_2");
        assert_eq!(
            serde_json::to_string(&events[3]["snapshot"]["loop"]).unwrap(),
            r#"{"loopId":"L","phase":"iteration:start","iteration":2,"goal":"g"}"#
        );
    }

    #[test]
    fn run_end_announces_a_file_result_once() {
        let file = json!({"uri": "f://a", "mimeType": "text/plain"});
        let (transformer, events) = run(&[
            json!({"type": "agent:run:end", "result": file}),
            json!({"type": "text:delta", "delta": "late"}),
        ]);
        let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
        assert_eq!(types, ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]);
        assert_eq!(events[2]["result"], file);
        assert_eq!(transformer.framer().dropped, 1);
    }

    #[test]
    fn interrupts_shape_the_outcome() {
        let (_, events) = run(&[
            json!({"type": "human:required", "message": "ok?"}),
            json!({"type": "human:required", "interruptId": "r:i1"}),
            json!({"type": "agent:run:end"}),
        ]);
        assert_eq!(
            events[1]["outcome"],
            json!({"type": "interrupt", "interrupts": [{"id": "r:i1", "reason": "human_required", "message": "ok?"}]})
        );
    }

    #[test]
    fn hot_crumbs_apply_as_parsed_ones() {
        let parsed = [
            json!({"type": "text:delta", "delta": "hi"}),
            json!({"type": "tool:input:start", "toolCallId": "c", "toolName": "f"}),
            json!({"type": "tool:input:end", "toolCallId": "c"}),
            json!({"type": "tool:call", "toolCallId": "d", "toolName": "g", "input": {"a": 1}}),
            json!({"type": "tool:result", "toolCallId": "d", "result": "ok"}),
            json!({"type": "pipeline:step:start", "stepName": "s"}),
            json!({"type": "pipeline:step:end", "stepName": "s"}),
        ];
        let (_, expected) = run(&parsed);
        let mut transformer = Crumbs::new("t".into(), "r".into(), Map::new());
        let mut events = Vec::new();
        let mut hot = |transformer: &mut Crumbs, act: &dyn Fn(&mut Crumbs)| {
            transformer.call_checked(act);
            let out = transformer.framer_mut().take_out();
            events.extend(out.iter().map(crate::event::Event::to_value));
        };
        hot(&mut transformer, &|t| t.framer.text("hi"));
        hot(&mut transformer, &|t| {
            t.apply_hot(Hot::InputStart {
                tool_call_id: "c",
                tool_name: "f",
            });
        });
        hot(&mut transformer, &|t| {
            t.apply_hot(Hot::InputEnd { tool_call_id: "c" });
        });
        hot(&mut transformer, &|t| {
            t.apply_hot(Hot::Call {
                tool_call_id: "d",
                tool_name: "g",
                args: r#"{"a":1}"#,
            });
        });
        hot(&mut transformer, &|t| {
            t.apply_hot(Hot::Result {
                tool_call_id: "d",
                content: "ok".into(),
            });
        });
        hot(&mut transformer, &|t| {
            t.apply_hot(Hot::StepStart { step_name: "s" });
        });
        hot(&mut transformer, &|t| {
            t.apply_hot(Hot::StepEnd { step_name: "s" });
        });
        assert_eq!(events, expected);
    }

    #[test]
    fn bad_error_objects_are_named() {
        let mut transformer = Crumbs::new("t".into(), "r".into(), Map::new());
        let crumb = json!({"type": "tool:error", "toolCallId": "c", "error": {"code": "x"}});
        let error = transformer.call(Input::from_json(&crumb)).unwrap_err();
        assert_eq!(
            error.message(),
            "tool:error: 'error.message' must be a string"
        );
        assert!(!transformer.framer().started);
    }
}
