//! Rules 10 and 12: the typed fields of an input item, checked before anything changes.

use std::borrow::Cow;

use crate::error::CrumbError;
use crate::event::Fields;
use crate::json::Value;

/// A field name; the contract's own names are borrowed, not allocated.
pub type Key = Cow<'static, str>;

const KNOWN_NAMES: [&str; 39] = [
    "type",
    "delta",
    "toolCallId",
    "toolName",
    "input",
    "result",
    "error",
    "message",
    "code",
    "stepName",
    "loopId",
    "iteration",
    "phase",
    "sessionId",
    "runId",
    "interruptId",
    "reason",
    "responseSchema",
    "subagentId",
    "parentAgentId",
    "status",
    "output",
    "taskRunId",
    "taskId",
    "model",
    "durationMs",
    "usage",
    "uri",
    "mimeType",
    "name",
    "content",
    "id",
    "plan",
    "messageId",
    "threadId",
    "toolCallName",
    "snapshot",
    "value",
    "outcome",
];

pub fn key(name: &str) -> Key {
    match KNOWN_NAMES.iter().find(|known| **known == name) {
        Some(known) => Cow::Borrowed(known),
        None => Cow::Owned(name.to_owned()),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Int,
    Object,
    Json,
}

impl Kind {
    pub fn text(self) -> &'static str {
        match self {
            Kind::Str => "a string",
            Kind::Int => "an integer",
            Kind::Object => "an object",
            Kind::Json => "a JSON value",
        }
    }
}

/// What the type checks need to know of an input value, before it is a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    Null,
    Str,
    /// An integer that is not a bool.
    Int,
    Dict,
    Other,
}

/// A top-level field value: its shape and, when it is JSON, its normal form.
#[derive(Debug, Clone, PartialEq)]
pub struct Loose {
    pub shape: Shape,
    /// `None` when the value is not JSON (a lone surrogate, a big int, an object…).
    pub value: Option<Value>,
}

impl Loose {
    /// A field read from JSON text, as the vectors carry them.
    pub fn from_json(value: &Value) -> Self {
        let shape = match value {
            Value::Null => Shape::Null,
            Value::String(_) => Shape::Str,
            Value::Number(number) if !number.is_f64() => Shape::Int,
            Value::Object(_) => Shape::Dict,
            _ => Shape::Other,
        };
        Self {
            shape,
            value: Some(value.clone()),
        }
    }
}

/// A dict's entries in insertion order; a key is `None` when it is not a valid string.
pub type Entries = Vec<(Option<Key>, Loose)>;

/// An input item as the dialects see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A dict.
    Dict(Entries),
    /// A str; `None` when it holds a lone surrogate.
    Str {
        text: Option<String>,
        type_name: String,
    },
    Other {
        type_name: String,
    },
}

impl Input {
    pub fn from_json(value: &Value) -> Self {
        match value {
            Value::Object(map) => Input::Dict(
                map.iter()
                    .map(|(name, item)| (Some(key(name)), Loose::from_json(item)))
                    .collect(),
            ),
            Value::String(text) => Input::Str {
                text: Some(text.clone()),
                type_name: "str".to_owned(),
            },
            other => Input::Other {
                type_name: python_type_name(other).to_owned(),
            },
        }
    }
}

fn python_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(number) if number.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The entries and string `type` of an item that must be a typed dict (a crumb, an event).
pub fn typed_dict(input: Input, what: &str) -> Result<(String, Entries), CrumbError> {
    let mut entries = match input {
        Input::Dict(entries) => entries,
        Input::Str { type_name, .. } | Input::Other { type_name } => {
            return Err(CrumbError::new(format!(
                "{what} must be a dict, not {type_name}"
            )));
        }
    };
    let Some(item_type) = take_type(&mut entries) else {
        return Err(CrumbError::new(format!("{what} has no string 'type'")));
    };
    Ok((item_type, entries))
}

/// The string `type` of a dict item, moved out (parsing skips that field).
pub fn take_type(entries: &mut [(Option<Key>, Loose)]) -> Option<String> {
    let (_, loose) = entries
        .iter_mut()
        .find(|(key, _)| key.as_deref() == Some("type"))?;
    match loose {
        Loose {
            shape: Shape::Str,
            value: Some(Value::String(text)),
        } => Some(std::mem::take(text)),
        _ => None,
    }
}

/// Rule 12 types a crumb field by its name, whatever the crumb (the field table's rule).
pub fn kind_by_name(field: &str) -> Kind {
    crate::table::kind_by_name(field)
}

#[cold]
pub fn wrong(item_type: &str, field: &str, kind: Kind) -> CrumbError {
    CrumbError::new(format!("{item_type}: '{field}' must be {}", kind.text()))
}

/// The normal form of a present, non-null field, or the rule-10 error; the value is moved out.
pub fn check(
    item_type: &str,
    field: &str,
    loose: &mut Loose,
    kind: Kind,
) -> Result<Value, CrumbError> {
    let fits = match kind {
        Kind::Str => loose.shape == Shape::Str,
        Kind::Int => loose.shape == Shape::Int,
        Kind::Object => loose.shape == Shape::Dict,
        Kind::Json => true,
    };
    if !fits {
        return Err(wrong(item_type, field, kind));
    }
    loose
        .value
        .take()
        .ok_or_else(|| wrong(item_type, field, Kind::Json))
}

/// Crumbs carry errors as {code: string, message: string}.
pub fn check_error_object(item_type: &str, error: &Value) -> Result<(), CrumbError> {
    for part in ["code", "message"] {
        if !matches!(error.get(part), Some(Value::String(_))) {
            return Err(wrong(item_type, &format!("error.{part}"), Kind::Str));
        }
    }
    Ok(())
}

/// How the fields outside `required` are typed.
#[derive(Clone, Copy)]
pub enum Kinds<'a> {
    /// Crumbs: by name (rule 12).
    ByName,
    /// Chunks: only the listed fields are typed; the rest are JSON values.
    Listed(&'a [(&'a str, Kind)]),
    /// Events: only the listed fields are read at all (`timestamp`, `rawEvent`… never are).
    Only(&'a [(&'a str, Kind)]),
}

impl Kinds<'_> {
    fn of(self, field: &str) -> Kind {
        match self {
            Kinds::ByName => kind_by_name(field),
            Kinds::Listed(list) | Kinds::Only(list) => list
                .iter()
                .find(|(name, _)| *name == field)
                .map_or(Kind::Json, |(_, kind)| *kind),
        }
    }
}

/// Checks the required fields first, then every other field in item order.
///
/// `null` means absent unless `keep_null` (a chunk's payload is a value, where
/// null is data). Values are moved out of `entries`, which is spent.
pub fn parse_fields(
    item_type: &str,
    entries: &mut [(Option<Key>, Loose)],
    required: &[&'static str],
    kinds: Kinds<'_>,
    keep_null: bool,
) -> Result<Fields, CrumbError> {
    let mut out = Fields::with_capacity(entries.len());
    for &field in required {
        let kind = kinds.of(field);
        let found = entries
            .iter_mut()
            .find(|(key, _)| key.as_deref() == Some(field))
            .map(|(_, value)| value);
        match found {
            None
            | Some(Loose {
                shape: Shape::Null, ..
            }) => return Err(wrong(item_type, field, kind)),
            Some(loose) => {
                out.insert(Cow::Borrowed(field), check(item_type, field, loose, kind)?);
            }
        }
    }
    for (key, loose) in entries.iter_mut() {
        if let Kinds::Only(list) = kinds
            && !list.iter().any(|(name, _)| key.as_deref() == Some(*name))
        {
            continue;
        }
        let Some(field) = key else {
            return Err(CrumbError::new(format!(
                "{item_type}: field names must be strings"
            )));
        };
        if field == "type" || out.contains_key(field) {
            continue;
        }
        if loose.shape == Shape::Null {
            if keep_null {
                out.insert(std::mem::take(field), Value::Null);
            }
            continue;
        }
        let value = check(item_type, field, loose, kinds.of(field))?;
        out.insert(std::mem::take(field), value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(value: &Value) -> Vec<(Option<Key>, Loose)> {
        match Input::from_json(value) {
            Input::Dict(entries) => entries,
            _ => unreachable!(),
        }
    }

    #[test]
    fn kinds_by_name() {
        assert_eq!(kind_by_name("toolCallId"), Kind::Str);
        assert_eq!(kind_by_name("toolName"), Kind::Str);
        assert_eq!(kind_by_name("iteration"), Kind::Int);
        assert_eq!(kind_by_name("usage"), Kind::Object);
        assert_eq!(kind_by_name("model"), Kind::Json);
    }

    #[test]
    fn required_first_then_item_order() {
        let item = json!({"type": "x", "a": 1, "delta": null});
        let error = parse_fields("x", &mut entries(&item), &["delta"], Kinds::ByName, false);
        assert_eq!(error.unwrap_err().message(), "x: 'delta' must be a string");
        let item = json!({"type": "x", "iteration": true, "delta": "d"});
        let error = parse_fields("x", &mut entries(&item), &["delta"], Kinds::ByName, false);
        assert_eq!(
            error.unwrap_err().message(),
            "x: 'iteration' must be an integer"
        );
        let item = json!({"type": "x", "b": 2, "delta": "d", "c": null});
        let fields =
            parse_fields("x", &mut entries(&item), &["delta"], Kinds::ByName, false).unwrap();
        assert_eq!(
            Value::Object(fields.into_map()),
            json!({"delta": "d", "b": 2})
        );
    }

    #[test]
    fn not_json_is_named() {
        let mut items = entries(&json!({"type": "x", "delta": "d"}));
        items[1].1.value = None;
        let error = parse_fields("x", &mut items, &[], Kinds::ByName, false);
        assert_eq!(
            error.unwrap_err().message(),
            "x: 'delta' must be a JSON value"
        );
        items[1].0 = None;
        let error = parse_fields("x", &mut items, &[], Kinds::ByName, false);
        assert_eq!(
            error.unwrap_err().message(),
            "x: field names must be strings"
        );
    }
}
