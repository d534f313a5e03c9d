//! Python objects to core inputs and JSON values, and events back to dicts.

use agui_bridge_core::fields::{self, Input, Loose, Shape};
use agui_bridge_core::framing::Event;
use agui_bridge_core::json::{self, MAX_DEPTH, Map, Value, float};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

pub fn type_name(obj: &Bound<'_, PyAny>) -> PyResult<String> {
    // Bare text chunks pass here on every message start: skip the attribute lookup.
    if obj.is_exact_instance_of::<PyString>() {
        return Ok("str".to_owned());
    }
    Ok(obj.get_type().name()?.to_string_lossy().into_owned())
}

fn int_value(obj: &Bound<'_, PyAny>) -> Option<Value> {
    if let Ok(value) = obj.extract::<i64>() {
        return Some(value.into());
    }
    obj.extract::<u64>().ok().map(Value::from)
}

/// The normal form of a JSON value (rule 11), or `None` when it is not one.
///
/// The checks run in the order of the pure build's `normalize`: bool before int,
/// scalars before the depth limit.
pub fn to_value(obj: &Bound<'_, PyAny>, depth: usize) -> Option<Value> {
    if obj.is_none() {
        return Some(Value::Null);
    }
    if let Ok(value) = obj.cast::<PyBool>() {
        return Some(Value::Bool(value.is_true()));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return text
            .to_str()
            .ok()
            .map(|text| Value::String(text.to_owned()));
    }
    if obj.is_instance_of::<PyInt>() {
        return int_value(obj);
    }
    if let Ok(value) = obj.cast::<PyFloat>() {
        return Some(float(value.value()));
    }
    if depth >= MAX_DEPTH {
        return None;
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        return dict_value(dict, depth).map(Value::Object);
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list
            .iter()
            .map(|item| to_value(&item, depth + 1))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple
            .iter()
            .map(|item| to_value(&item, depth + 1))
            .collect::<Option<Vec<_>>>()
            .map(Value::Array);
    }
    None
}

/// Writes the compact JSON of `obj` as `to_value` then `json::write_value` would,
/// without building the value; `false` (with `out` partly written) when it is
/// not JSON, or when a key is a str subclass, whose duplicates only the value
/// tree merges as the general path does.
pub fn write_json(out: &mut Vec<u8>, obj: &Bound<'_, PyAny>, depth: usize) -> bool {
    if obj.is_none() {
        out.extend_from_slice(b"null");
        return true;
    }
    if let Ok(value) = obj.cast::<PyBool>() {
        out.extend_from_slice(if value.is_true() { b"true" } else { b"false" });
        return true;
    }
    if let Ok(text) = obj.cast::<PyString>() {
        let Ok(text) = text.to_str() else {
            return false;
        };
        json::write_str(out, text);
        return true;
    }
    if obj.is_instance_of::<PyInt>() {
        let Some(value) = int_value(obj) else {
            return false;
        };
        json::write_value(out, &value);
        return true;
    }
    if let Ok(value) = obj.cast::<PyFloat>() {
        json::write_value(out, &float(value.value()));
        return true;
    }
    if depth >= MAX_DEPTH {
        return false;
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        out.push(b'{');
        for (index, (key, item)) in dict.iter().enumerate() {
            let Ok(key) = key.cast_exact::<PyString>() else {
                return false;
            };
            let Ok(key) = key.to_str() else {
                return false;
            };
            if index > 0 {
                out.push(b',');
            }
            json::write_str(out, key);
            out.push(b':');
            if !write_json(out, &item, depth + 1) {
                return false;
            }
        }
        out.push(b'}');
        return true;
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return write_items(out, list.iter(), depth);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return write_items(out, tuple.iter(), depth);
    }
    false
}

fn write_items<'py>(
    out: &mut Vec<u8>,
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    depth: usize,
) -> bool {
    out.push(b'[');
    for (index, item) in items.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        if !write_json(out, &item, depth + 1) {
            return false;
        }
    }
    out.push(b']');
    true
}

/// The compact JSON text of `obj`, or `None` when it is not JSON (see `write_json`).
pub fn json_text(obj: &Bound<'_, PyAny>) -> Option<String> {
    let mut out = Vec::with_capacity(64);
    if !write_json(&mut out, obj, 0) {
        return None;
    }
    // Only valid UTF-8 is ever written: every string was read with `to_str`.
    String::from_utf8(out).ok()
}

pub fn dict_value(dict: &Bound<'_, PyDict>, depth: usize) -> Option<Map<String, Value>> {
    let mut map = Map::with_capacity(dict.len());
    for (key, item) in dict.iter() {
        let key = key.cast::<PyString>().ok()?.to_str().ok()?;
        map.insert(key.to_owned(), to_value(&item, depth + 1)?);
    }
    Some(map)
}

fn loose(obj: &Bound<'_, PyAny>) -> Loose {
    let shape = if obj.is_none() {
        Shape::Null
    } else if obj.is_instance_of::<PyBool>() {
        Shape::Other
    } else if obj.is_instance_of::<PyString>() {
        Shape::Str
    } else if obj.is_instance_of::<PyInt>() {
        Shape::Int
    } else if obj.is_instance_of::<PyDict>() {
        Shape::Dict
    } else {
        Shape::Other
    };
    Loose {
        shape,
        value: to_value(obj, 0),
    }
}

/// An input item. A `type` with a lone surrogate is not a JSON string (rule 11),
/// so it counts as no string `type` at all, as in the pure build.
pub fn to_input(obj: &Bound<'_, PyAny>) -> PyResult<Input> {
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut entries = Vec::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let key = key
                .cast::<PyString>()
                .ok()
                .and_then(|key| key.to_str().ok())
                .map(fields::key);
            let mut value = loose(&item);
            if key.as_deref() == Some("type") && value.shape == Shape::Str && value.value.is_none()
            {
                value.shape = Shape::Other;
            }
            entries.push((key, value));
        }
        return Ok(Input::Dict(entries));
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return Ok(Input::Str {
            text: text.to_str().ok().map(str::to_owned),
            type_name: type_name(obj)?,
        });
    }
    Ok(Input::Other {
        type_name: type_name(obj)?,
    })
}

pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        Value::Number(number) => {
            if let Some(int) = number.as_i64() {
                int.into_pyobject(py)?.into_any()
            } else if let Some(int) = number.as_u64() {
                int.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, number.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(text) => PyString::new(py, text).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => map_to_py(py, map)?.into_any(),
    })
}

// Event keys repeat in every event: interned, they cost no allocation.
fn key<'py>(py: Python<'py>, key: &str) -> Bound<'py, PyString> {
    let interned = match key {
        "type" => intern!(py, "type"),
        "messageId" => intern!(py, "messageId"),
        "delta" => intern!(py, "delta"),
        "role" => intern!(py, "role"),
        "threadId" => intern!(py, "threadId"),
        "runId" => intern!(py, "runId"),
        "toolCallId" => intern!(py, "toolCallId"),
        "toolCallName" => intern!(py, "toolCallName"),
        "parentMessageId" => intern!(py, "parentMessageId"),
        "content" => intern!(py, "content"),
        "stepName" => intern!(py, "stepName"),
        "snapshot" => intern!(py, "snapshot"),
        "name" => intern!(py, "name"),
        "value" => intern!(py, "value"),
        "message" => intern!(py, "message"),
        "code" => intern!(py, "code"),
        "result" => intern!(py, "result"),
        "outcome" => intern!(py, "outcome"),
        _ => return PyString::new(py, key),
    };
    interned.clone()
}

pub fn map_to_py<'py>(py: Python<'py>, map: &Map<String, Value>) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, item) in map {
        dict.set_item(key(py, name), to_py(py, item)?)?;
    }
    Ok(dict)
}

pub fn event_to_py<'py>(py: Python<'py>, event: &Event) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "type"), PyString::new(py, event.kind))?;
    for (name, item) in &event.fields {
        dict.set_item(key(py, name), to_py(py, item)?)?;
    }
    Ok(dict)
}

pub fn events_to_py<'py>(py: Python<'py>, events: &[Event]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for event in events {
        list.append(event_to_py(py, event)?)?;
    }
    Ok(list)
}

pub fn maps_to_py<'py>(
    py: Python<'py>,
    maps: &[Map<String, Value>],
) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for map in maps {
        list.append(map_to_py(py, map)?)?;
    }
    Ok(list)
}
