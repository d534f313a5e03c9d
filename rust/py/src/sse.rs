//! `encode_sse`: SSE frames for event dicts the caller built.

use agui_bridge_core::json::{Map, Value};
use agui_bridge_core::sse;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::convert::{to_value, type_name};
use crate::errors::message_error;

fn event(obj: &Bound<'_, PyAny>) -> PyResult<Map<String, Value>> {
    let Ok(dict) = obj.cast::<PyDict>() else {
        return Err(message_error(format!(
            "event must be a dict, not {}",
            type_name(obj)?
        )));
    };
    // A lone surrogate is not a JSON string (rule 11), so such a type is no type.
    let event_type = dict
        .get_item(intern!(obj.py(), "type"))?
        .and_then(|value| Some(value.cast::<PyString>().ok()?.to_str().ok()?.to_owned()))
        .ok_or_else(|| message_error("event has no string 'type'".to_owned()))?;
    let mut out = Map::with_capacity(dict.len());
    for (key, value) in dict.iter() {
        let Some(key) = key
            .cast::<PyString>()
            .ok()
            .and_then(|key| key.to_str().ok())
        else {
            return Err(message_error(format!(
                "{event_type}: field names must be strings"
            )));
        };
        if value.is_none() {
            continue;
        }
        let Some(value) = to_value(&value, 0) else {
            return Err(message_error(format!(
                "{event_type}: '{key}' must be a JSON value"
            )));
        };
        // Rule 11 turns a non-finite float into None before rule 8 omits it.
        if value.is_null() {
            continue;
        }
        out.insert(key.to_owned(), value);
    }
    Ok(out)
}

/// One `data:` frame per event; `None` fields are omitted (rule 8).
#[pyfunction]
pub fn encode_sse<'py>(event_or_events: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
    let py = event_or_events.py();
    let mut out = Vec::new();
    if event_or_events.is_instance_of::<PyDict>() {
        sse::write_map_frame(&mut out, &event(event_or_events)?);
    } else if let Ok(list) = event_or_events.cast::<PyList>() {
        for item in list.iter() {
            sse::write_map_frame(&mut out, &event(&item)?);
        }
    } else if let Ok(tuple) = event_or_events.cast::<PyTuple>() {
        for item in tuple.iter() {
            sse::write_map_frame(&mut out, &event(&item)?);
        }
    } else {
        return Err(message_error(format!(
            "encode_sse takes a dict or a list of dicts, not {}",
            type_name(event_or_events)?
        )));
    }
    Ok(PyBytes::new(py, &out))
}
