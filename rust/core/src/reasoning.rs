//! Reasoning messages in the framing core (contract section 8).
//!
//! One reasoning message is open at a time, like text, and never while text is
//! open: opening either closes the other. `REASONING_START` and
//! `REASONING_MESSAGE_START` of one message share its id and open together;
//! `REASONING_MESSAGE_END` and `REASONING_END` close it together.

use crate::framing::{Event, Framer, IdKind, event};
use crate::json::Value;

/// The subtypes `REASONING_ENCRYPTED_VALUE` knows.
pub const SUBTYPES: [&str; 2] = ["message", "tool-call"];

fn with_id(kind: &'static str, id: &str) -> Event {
    let mut out = event(kind);
    out.put("messageId", id);
    out
}

impl Framer {
    /// A delta of the open reasoning message, opening one (under a fresh id) when none is.
    pub fn reasoning(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        if self.reasoning_id.is_none() {
            let id = self.new_id(IdKind::Reasoning);
            self.open_reasoning(id);
        }
        // Reasoning is not coalesced; a held delta goes out before it.
        self.flush_held();
        let id = self.reasoning_id.clone().unwrap_or_default();
        let mut content = with_id("REASONING_MESSAGE_CONTENT", &id);
        content.put("delta", delta);
        self.out.push(content);
        self.messages.push_reasoning(delta);
    }

    /// Opens a reasoning message under a given id (closing what is open); content follows.
    pub fn open_reasoning_as(&mut self, id: String) {
        self.close_reasoning();
        self.used_ids.insert(id.clone());
        self.open_reasoning(id);
    }

    fn open_reasoning(&mut self, id: String) {
        self.close_text();
        self.flush_held();
        self.out.push(with_id("REASONING_START", &id));
        let mut start = with_id("REASONING_MESSAGE_START", &id);
        start.put("role", "reasoning");
        self.out.push(start);
        self.messages.open_reasoning(&id);
        self.reasoning_ids.insert(id.clone());
        self.reasoning_id = Some(id.clone());
        self.latest_reasoning_id = Some(id);
    }

    pub fn close_reasoning(&mut self) {
        if self.reasoning_id.is_some() {
            self.flush_held();
        }
        if let Some(id) = self.reasoning_id.take() {
            self.messages.close_reasoning();
            self.out.push(with_id("REASONING_MESSAGE_END", &id));
            self.out.push(with_id("REASONING_END", &id));
        }
    }

    /// `reasoning:end`: closes the open reasoning message, else a drop.
    pub fn end_reasoning(&mut self) {
        if self.reasoning_id.is_some() {
            self.close_reasoning();
        } else {
            self.dropped += 1;
        }
    }

    /// `REASONING_ENCRYPTED_VALUE` for an entity of this run: a reasoning message
    /// (subtype `message`; by default the open, else the latest one) or a tool
    /// call (`tool-call`). Naming nothing of this run, it is dropped: the client
    /// would attach it to a message the run never made, and the store could not.
    pub fn encrypted(&mut self, subtype: &str, entity_id: Option<&str>, value: &str) {
        let entity = match (subtype, entity_id) {
            ("tool-call", Some(id)) if self.known_tools.contains(id) => Some(id.to_owned()),
            ("message", Some(id)) if self.reasoning_ids.contains(id) => Some(id.to_owned()),
            ("message", None) => self
                .reasoning_id
                .clone()
                .or_else(|| self.latest_reasoning_id.clone()),
            _ => None,
        };
        let Some(entity) = entity else {
            self.dropped += 1;
            return;
        };
        self.messages.encrypted(subtype, &entity, value);
        let mut out = event("REASONING_ENCRYPTED_VALUE");
        out.put("subtype", subtype);
        out.put("entityId", entity);
        out.put("encryptedValue", value);
        self.emit(out);
    }
}

/// A subtype `REASONING_ENCRYPTED_VALUE` knows, or the error naming the field.
pub fn check_subtype(item_type: &str, subtype: Option<&str>) -> Result<(), crate::CrumbError> {
    match subtype {
        None => Ok(()),
        Some(subtype) if SUBTYPES.contains(&subtype) => Ok(()),
        Some(_) => Err(crate::CrumbError::new(format!(
            "{item_type}: 'subtype' must be \"message\" or \"tool-call\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::framing::Framer;
    use crate::json::Map;

    fn types(framer: &Framer) -> Vec<&str> {
        framer.out.iter().map(|e| e.kind).collect()
    }

    #[test]
    fn reasoning_closes_before_text_and_tools_and_terminal() {
        let mut framer = Framer::new("t".into(), "r".into(), Map::new(), false);
        framer.start(None, None);
        framer.reasoning("a");
        framer.reasoning("b");
        framer.text("x");
        framer.reasoning("c");
        assert!(framer.tool_start("k", "f"));
        framer.reasoning("d");
        framer.encrypted("message", None, "sig");
        framer.run_finished(None, None);
        assert_eq!(
            types(&framer),
            [
                "RUN_STARTED",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TOOL_CALL_START",
                "REASONING_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_ENCRYPTED_VALUE",
                "REASONING_MESSAGE_END",
                "REASONING_END",
                "TOOL_CALL_END",
                "RUN_FINISHED",
            ]
        );
        assert_eq!(framer.out[1]["messageId"], "r:th1");
        assert_eq!(framer.out[16]["messageId"], "r:th3");
        assert_eq!(framer.out[19]["entityId"], "r:th3");
    }
}

/// The events dialect's reasoning and activity (docs/events-dialect.md): the
/// agent's `REASONING_*` and `ACTIVITY_*` repaired as its text is.
#[derive(Debug, Clone, Default)]
pub struct Repair {
    /// The agent's reasoning message id → the id it streams under (`None`: announced, no content yet).
    messages: HashMap<String, Option<String>>,
    ended: HashSet<String>,
    /// The agent's reasoning spans (`REASONING_START`), open or not.
    spans: HashMap<String, bool>,
    /// The agent's activity id → the id it streams under (its content is the
    /// run's messages': they are stored with the thread).
    activities: HashMap<String, String>,
}

use crate::framing::{HashMap, HashSet};

impl Repair {
    /// `REASONING_START`: a span the agent opens (its messages carry their own ids).
    pub fn start_span(&mut self, framer: &mut Framer, id: &str) {
        if self.spans.contains_key(id) {
            framer.dropped += 1;
        } else {
            self.spans.insert(id.to_owned(), true);
        }
    }

    /// `REASONING_END`: closes the span, and with it the reasoning it holds.
    pub fn end_span(&mut self, framer: &mut Framer, id: &str) {
        if self.spans.get(id) != Some(&true) {
            framer.dropped += 1;
            return;
        }
        self.spans.insert(id.to_owned(), false);
        framer.close_reasoning();
    }

    /// `REASONING_MESSAGE_START`: announces the id; content opens it.
    pub fn start(&mut self, framer: &mut Framer, id: &str) {
        if self.messages.contains_key(id) {
            framer.dropped += 1;
        } else {
            self.messages.insert(id.to_owned(), None);
        }
    }

    /// Content for the agent's reasoning message `id` (opened when it is not open).
    pub fn content(&mut self, framer: &mut Framer, id: &str, delta: &str) {
        if self.ended.contains(id) {
            framer.dropped += 1;
            return;
        }
        if delta.is_empty() {
            self.messages.entry(id.to_owned()).or_insert(None);
            return;
        }
        let streamed = self.messages.get(id).cloned().flatten();
        if streamed.is_none() || streamed != framer.reasoning_id {
            // Ids are never reused in a run: a message the core closed goes on
            // under a fresh id, as text does.
            let fresh = if framer.used_ids.contains(id) || framer.holds(id) {
                framer.new_id(IdKind::Reasoning)
            } else {
                id.to_owned()
            };
            framer.open_reasoning_as(fresh.clone());
            self.messages.insert(id.to_owned(), Some(fresh));
        }
        framer.reasoning(delta);
    }

    /// `REASONING_MESSAGE_CHUNK`: content for its id, else for the open message
    /// or a new one.
    pub fn chunk(&mut self, framer: &mut Framer, id: Option<&str>, delta: &str) {
        match id {
            Some(id) => self.content(framer, id, delta),
            None => framer.reasoning(delta),
        }
    }

    /// `REASONING_MESSAGE_END`.
    pub fn end(&mut self, framer: &mut Framer, id: &str) {
        let Some(streamed) = self.messages.get(id) else {
            framer.dropped += 1;
            return;
        };
        if self.ended.contains(id) {
            framer.dropped += 1;
            return;
        }
        let open = streamed.is_some() && *streamed == framer.reasoning_id;
        self.ended.insert(id.to_owned());
        if open {
            framer.close_reasoning();
        }
    }

    /// `REASONING_ENCRYPTED_VALUE`: a `message` entity is named by the agent's id.
    pub fn encrypted(&mut self, framer: &mut Framer, subtype: &str, id: &str, value: &str) {
        let entity = match (subtype, self.messages.get(id)) {
            ("message", Some(Some(streamed))) => streamed.clone(),
            _ => id.to_owned(),
        };
        framer.encrypted(subtype, Some(&entity), value);
    }

    /// `ACTIVITY_SNAPSHOT`. An id the run used for something else or the
    /// thread holds (an activity of an earlier run included) goes out under a
    /// fresh one: the client's reducer would replace that message in place,
    /// where the stored thread cannot follow.
    pub fn activity_snapshot(
        &mut self,
        framer: &mut Framer,
        id: &str,
        activity_type: &str,
        content: Value,
        replace: Option<Value>,
    ) {
        let known = self.activities.contains_key(id);
        if !known {
            let taken = framer.used_ids.contains(id) || framer.holds(id);
            let streamed = if taken {
                framer.new_id(IdKind::Activity)
            } else {
                id.to_owned()
            };
            framer.used_ids.insert(streamed.clone());
            self.activities.insert(id.to_owned(), streamed);
        }
        let streamed = self.activities[id].clone();
        // `replace: false` keeps an existing activity (content and type), as the client does.
        if !(known && replace == Some(Value::Bool(false))) {
            let Value::Object(map) = &content else {
                unreachable!("the field table types content as an object")
            };
            framer
                .messages
                .set_activity(&streamed, activity_type, map.clone());
        }
        let mut out = event("ACTIVITY_SNAPSHOT");
        out.put("messageId", streamed);
        out.put("activityType", activity_type);
        out.put("content", content);
        if let Some(replace @ Value::Bool(_)) = replace {
            out.put("replace", replace);
        }
        framer.emit(out);
    }

    /// `ACTIVITY_DELTA`: a JSON Patch of an activity this run made, applied to
    /// its content as the client will (RFC 6902, as `STATE_DELTA`); one that
    /// does not apply is dropped, and each operation is sent reduced to its
    /// schema's members. An empty patch sends nothing. The client takes the
    /// delta's `activityType` as the activity's.
    pub fn activity_delta(
        &mut self,
        framer: &mut Framer,
        id: &str,
        activity_type: &str,
        patch: &Value,
    ) {
        let Some(streamed) = self.activities.get(id) else {
            framer.dropped += 1;
            return;
        };
        let Some(content) = framer.messages.activity(streamed) else {
            return; // never: the run's first snapshot of an activity records it
        };
        let Ok((patched, sent)) = crate::patch::apply_patch("ACTIVITY_DELTA", content, Some(patch))
        else {
            framer.dropped += 1;
            return;
        };
        if sent.as_array().is_none_or(Vec::is_empty) {
            return;
        }
        framer
            .messages
            .set_activity(streamed, activity_type, patched);
        let mut out = event("ACTIVITY_DELTA");
        out.put("messageId", streamed.as_str());
        out.put("activityType", activity_type);
        out.put("patch", sent);
        framer.emit(out);
    }
}
