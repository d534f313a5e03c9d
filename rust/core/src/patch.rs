//! `STATE_DELTA`: an RFC 6902 JSON Patch applied to the run state, all or nothing.
//!
//! The patch is checked and applied to a copy while the event is parsed, so a
//! patch that does not apply raises `CrumbError` and the run state stays as it
//! was (rule 10). docs/events-dialect.md lists the rules and messages; the pure
//! build's `json_patch.py` is the same, message for message.

use crate::error::CrumbError;
use crate::json::{self, Map, Number, Value};

const OPS: [&str; 6] = ["add", "remove", "replace", "move", "copy", "test"];

/// The state after `delta` (a normalized JSON value), and the patch as sent.
///
/// `state` is not changed. Each operation is sent with only its schema's
/// members, in the schema's order (rule 8): `op`, `from`, `path`, `value`.
pub fn apply_patch(
    item_type: &str,
    state: &Map<String, Value>,
    delta: Option<&Value>,
) -> Result<(Map<String, Value>, Value), CrumbError> {
    let Some(Value::Array(ops)) = delta else {
        return Err(CrumbError::new(format!(
            "{item_type}: 'delta' must be an array"
        )));
    };
    let mut doc = Value::Object(state.clone());
    let mut sent = Vec::with_capacity(ops.len());
    for (index, op) in ops.iter().enumerate() {
        let at = format!("{item_type}: delta[{index}]");
        let field = format!("{item_type}: 'delta[{index}]");
        apply_op(&at, &field, &mut doc, op)?;
        let mut out = Map::new();
        for member in ["op", "from", "path", "value"] {
            if let Some(value) = op.get(member)
                && (matches!(member, "op" | "path") || members(op).contains(&member))
            {
                out.insert(member.to_owned(), value.clone());
            }
        }
        sent.push(Value::Object(out));
    }
    match doc {
        Value::Object(map) => Ok((map, Value::Array(sent))),
        _ => Err(stays_object(item_type)),
    }
}

/// An operation's members besides op and path (`ag_ui`'s `JsonPatchOperation`).
fn members(op: &Value) -> &'static [&'static str] {
    match op.get("op").and_then(Value::as_str) {
        Some("add" | "replace" | "test") => &["value"],
        Some("move" | "copy") => &["from"],
        _ => &[],
    }
}

fn quoted(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 2);
    json::write_str(&mut out, text);
    String::from_utf8_lossy(&out).into_owned()
}

#[cold]
fn stays_object(at: &str) -> CrumbError {
    CrumbError::new(format!("{at} the state must stay an object"))
}

/// The raw pointer `op[name]` and its tokens, or the error naming the field.
fn pointer<'a>(
    field: &str,
    op: &'a Map<String, Value>,
    name: &str,
) -> Result<(&'a str, Vec<String>), CrumbError> {
    let Some(Value::String(pointer)) = op.get(name) else {
        return Err(CrumbError::new(format!("{field}.{name}' must be a string")));
    };
    if pointer.is_empty() {
        return Ok((pointer, Vec::new()));
    }
    let bytes = pointer.as_bytes();
    let bad_escape = bytes
        .iter()
        .enumerate()
        .any(|(at, &byte)| byte == b'~' && !matches!(bytes.get(at + 1), Some(b'0' | b'1')));
    if bytes[0] != b'/' || bad_escape {
        return Err(CrumbError::new(format!(
            "{field}.{name}' must be a JSON pointer"
        )));
    }
    let tokens = pointer[1..]
        .split('/')
        .map(|token| token.replace("~1", "/").replace("~0", "~"))
        .collect();
    Ok((pointer, tokens))
}

fn apply_op(at: &str, field: &str, doc: &mut Value, op_value: &Value) -> Result<(), CrumbError> {
    let Value::Object(op) = op_value else {
        return Err(CrumbError::new(format!("{field}' must be an object")));
    };
    let name = match op.get("op") {
        Some(Value::String(name)) if OPS.contains(&name.as_str()) => name.as_str(),
        _ => {
            return Err(CrumbError::new(format!(
                "{field}.op' must be one of {}",
                OPS.join(", ")
            )));
        }
    };
    let (raw_path, path) = pointer(field, op, "path")?;
    let source = if members(op_value).contains(&"from") {
        Some(pointer(field, op, "from")?)
    } else {
        None
    };
    let value = op.get("value");
    if members(op_value).contains(&"value") && value.is_none() {
        return Err(CrumbError::new(format!("{field}.value' is missing")));
    }
    let at = format!("{at} {name}:");
    let missing = || CrumbError::new(format!("{at} nothing at {}", quoted(raw_path)));
    match (name, value, source) {
        ("test", Some(value), _) => {
            if get(doc, &path).is_some_and(|found| equal(found, value)) {
                Ok(())
            } else {
                Err(CrumbError::new(format!(
                    "{at} the value at {} differs",
                    quoted(raw_path)
                )))
            }
        }
        ("remove", _, _) => remove(doc, &path, &at, missing).map(drop),
        ("replace", Some(value), _) => replace(doc, &path, value.clone(), &at, missing),
        ("add", Some(value), _) => add(doc, &path, value.clone(), &at, missing),
        (_, _, Some((raw_from, from))) => {
            let Some(value) = get(doc, &from).cloned() else {
                return Err(CrumbError::new(format!(
                    "{at} nothing at {}",
                    quoted(raw_from)
                )));
            };
            if name == "copy" {
                return add(doc, &path, value, &at, missing);
            }
            if raw_path.starts_with(raw_from) && raw_path[raw_from.len()..].starts_with('/') {
                return Err(CrumbError::new(format!(
                    "{at} {} is inside {}",
                    quoted(raw_path),
                    quoted(raw_from)
                )));
            }
            remove(doc, &from, &at, missing)?;
            add(doc, &path, value, &at, missing)
        }
        _ => Err(missing()),
    }
}

/// The array index a token names (`-` is one past the end), or `None`.
fn index(token: &str, size: usize) -> Option<usize> {
    if token == "-" {
        return Some(size);
    }
    let digits = token.as_bytes();
    let canonical = !digits.is_empty()
        && digits.iter().all(u8::is_ascii_digit)
        && (digits[0] != b'0' || digits.len() == 1);
    // Too many digits for usize is past any end, as in Python.
    if canonical { token.parse().ok() } else { None }
}

fn get<'a>(mut doc: &'a Value, tokens: &[String]) -> Option<&'a Value> {
    for token in tokens {
        doc = match doc {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(index(token, items.len())?)?,
            _ => return None,
        };
    }
    Some(doc)
}

fn get_mut<'a>(mut doc: &'a mut Value, tokens: &[String]) -> Option<&'a mut Value> {
    for token in tokens {
        doc = match doc {
            Value::Object(map) => map.get_mut(token)?,
            Value::Array(items) => {
                let at = index(token, items.len())?;
                items.get_mut(at)?
            }
            _ => return None,
        };
    }
    Some(doc)
}

fn set_root(doc: &mut Value, value: Value, at: &str) -> Result<(), CrumbError> {
    if !value.is_object() {
        return Err(stays_object(at));
    }
    *doc = value;
    Ok(())
}

fn add(
    doc: &mut Value,
    tokens: &[String],
    value: Value,
    at: &str,
    missing: impl Fn() -> CrumbError,
) -> Result<(), CrumbError> {
    let Some((last, parents)) = tokens.split_last() else {
        return set_root(doc, value, at);
    };
    match get_mut(doc, parents) {
        Some(Value::Object(map)) => {
            // An existing key keeps its position, as in a Python dict.
            map.insert(last.clone(), value);
            Ok(())
        }
        Some(Value::Array(items)) => match index(last, items.len()) {
            Some(at) if at <= items.len() => {
                items.insert(at, value);
                Ok(())
            }
            _ => Err(missing()),
        },
        _ => Err(missing()),
    }
}

fn replace(
    doc: &mut Value,
    tokens: &[String],
    value: Value,
    at: &str,
    missing: impl Fn() -> CrumbError,
) -> Result<(), CrumbError> {
    let Some((last, parents)) = tokens.split_last() else {
        return set_root(doc, value, at);
    };
    match get_mut(doc, parents) {
        Some(Value::Object(map)) => match map.get_mut(last) {
            Some(slot) => {
                *slot = value;
                Ok(())
            }
            None => Err(missing()),
        },
        Some(Value::Array(items)) => {
            let len = items.len();
            match index(last, len).and_then(|at| items.get_mut(at)) {
                Some(slot) => {
                    *slot = value;
                    Ok(())
                }
                None => Err(missing()),
            }
        }
        _ => Err(missing()),
    }
}

fn remove(
    doc: &mut Value,
    tokens: &[String],
    at: &str,
    missing: impl Fn() -> CrumbError,
) -> Result<Value, CrumbError> {
    let Some((last, parents)) = tokens.split_last() else {
        return Err(stays_object(at));
    };
    match get_mut(doc, parents) {
        // shift_remove: the other keys keep their order, as in a Python dict.
        Some(Value::Object(map)) => map.shift_remove(last).ok_or_else(missing),
        Some(Value::Array(items)) => match index(last, items.len()) {
            Some(at) if at < items.len() => Ok(items.remove(at)),
            _ => Err(missing()),
        },
        _ => Err(missing()),
    }
}

fn integer(number: &Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

/// JSON equality: numbers by value (1 == 1.0), never a bool for a number.
fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Number(a), Value::Number(b)) => match (integer(a), integer(b)) {
            (Some(a), Some(b)) => a == b,
            #[allow(clippy::float_cmp)] // exact, as Python's float ==
            _ => a.as_f64() == b.as_f64(),
        },
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| equal(a, b))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| equal(a, b)))
        }
        _ => false,
    }
}
