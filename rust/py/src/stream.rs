//! The instance API both pyclasses share, generic over the dialect.
//!
//! The lock is never held while Python code can run (input conversion, dict
//! building, iteration), so a `__del__` or a generator that calls back into
//! the same transformer cannot deadlock it.

use std::sync::{Mutex, MutexGuard, PoisonError};

use agui_bridge_core::CrumbError;
use agui_bridge_core::chunks::Chunks;
use agui_bridge_core::crumbs::Crumbs;
use agui_bridge_core::framing::Event;
use agui_bridge_core::json::{self, Map, Value};
use agui_bridge_core::sse;
use agui_bridge_core::stream::{Dialect, FastText};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::convert::{events_to_py, map_to_py, to_input, type_name};
use crate::errors::{item_error, many_error};

/// Recognizes a plain text delta without converting the item.
pub trait FastInput {
    fn fast_delta<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>>;
}

fn two_key_delta<'py>(
    item: &Bound<'py, PyAny>,
    types: &[&str],
    field: &Bound<'py, PyString>,
) -> Option<Bound<'py, PyString>> {
    let dict = item.cast::<PyDict>().ok()?;
    // Any other field would need checking: leave such items to the general path.
    if dict.len() != 2 {
        return None;
    }
    let item_type = dict.get_item(intern!(item.py(), "type")).ok()??;
    let item_type = item_type.cast::<PyString>().ok()?.to_str().ok()?;
    if !types.contains(&item_type) {
        return None;
    }
    dict.get_item(field).ok()??.cast_into::<PyString>().ok()
}

impl FastInput for Crumbs {
    fn fast_delta<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
        two_key_delta(item, &["text:delta"], intern!(item.py(), "delta"))
    }
}

impl FastInput for Chunks {
    fn fast_delta<'py>(item: &Bound<'py, PyAny>) -> Option<Bound<'py, PyString>> {
        if let Ok(text) = item.cast::<PyString>() {
            return Some(text.clone());
        }
        two_key_delta(item, &["token", "chunk"], intern!(item.py(), "content"))
    }
}

pub fn lock<D>(inner: &Mutex<D>) -> MutexGuard<'_, D> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn call<'py, D: Dialect>(
    py: Python<'py>,
    inner: &Mutex<D>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let input = to_input(item)?;
    let events = lock(inner)
        .call(&input)
        .map_err(|error| item_error(item, error))?;
    events_to_py(py, &events)
}

/// Appends the frames of one item to `out`; a bad item appends nothing.
fn write_item<D: Dialect + FastInput>(
    inner: &Mutex<D>,
    item: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
) -> PyResult<Result<(), CrumbError>> {
    if let Some(delta) = D::fast_delta(item)
        && let Ok(text) = delta.to_str()
    {
        let mut guard = lock(inner);
        match guard.fast_text(text) {
            FastText::Nothing => return Ok(Ok(())),
            FastText::Content => {
                sse::write_content_frame(out, &guard.framer().content_prefix, text);
                return Ok(Ok(()));
            }
            FastText::General => {}
        }
    }
    let input = to_input(item)?;
    let events = lock(inner).call(&input);
    Ok(events.map(|events| sse::write_frames(out, &events)))
}

fn fill_content_frame(buffer: &mut [u8], prefix: &[u8], text: &str) {
    let (head, rest) = buffer.split_at_mut(prefix.len());
    head.copy_from_slice(prefix);
    let (quoted, tail) = rest.split_at_mut(text.len() + 2);
    quoted[0] = b'"';
    quoted[1..=text.len()].copy_from_slice(text.as_bytes());
    quoted[text.len() + 1] = b'"';
    tail.copy_from_slice(b"}\n\n");
}

pub fn encode<'py, D: Dialect + FastInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    if let Some(delta) = D::fast_delta(item)
        && let Ok(text) = delta.to_str()
    {
        let mut guard = lock(inner);
        match guard.fast_text(text) {
            FastText::Nothing => return Ok(PyBytes::new(py, b"")),
            FastText::Content => {
                let prefix = &guard.framer().content_prefix;
                // The common case, nothing to escape, is copied straight into the bytes.
                if json::escaped_len(text) == text.len() + 2 {
                    let len = sse::content_frame_len(prefix, text);
                    return PyBytes::new_with(py, len, |buffer| {
                        fill_content_frame(buffer, prefix, text);
                        Ok(())
                    });
                }
                let mut out = Vec::with_capacity(sse::content_frame_len(prefix, text));
                sse::write_content_frame(&mut out, prefix, text);
                return Ok(PyBytes::new(py, &out));
            }
            FastText::General => {}
        }
    }
    let mut out = Vec::new();
    write_item(inner, item, &mut out)?.map_err(|error| item_error(item, error))?;
    Ok(PyBytes::new(py, &out))
}

pub fn encode_many<'py, D: Dialect + FastInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    items: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    let mut index = 0usize;
    let mut each = |item: &Bound<'py, PyAny>| -> PyResult<()> {
        if let Err(error) = write_item(inner, item, &mut out)? {
            return Err(many_error(item, error, index, &out));
        }
        index += 1;
        Ok(())
    };
    if let Ok(list) = items.cast_exact::<PyList>() {
        // By index, re-reading the length, as a list iterator does.
        let mut at = 0;
        while at < list.len() {
            each(&list.get_item(at)?)?;
            at += 1;
        }
    } else if let Ok(tuple) = items.cast_exact::<PyTuple>() {
        for item in tuple.iter() {
            each(&item)?;
        }
    } else {
        for item in items.try_iter()? {
            each(&item?)?;
        }
    }
    Ok(PyBytes::new(py, &out))
}

pub fn finish<D: Dialect>(inner: &Mutex<D>) -> Vec<Event> {
    lock(inner).finish()
}

/// str(exc) with lone surrogates replaced as the pure build's `error_text` does.
#[cold]
fn error_parts(exc: &Bound<'_, PyAny>) -> PyResult<(String, String)> {
    let text = exc.str()?;
    let message = if let Ok(message) = text.to_str() {
        message.to_owned()
    } else {
        let bytes = text.call_method1(intern!(exc.py(), "encode"), ("utf-8", "replace"))?;
        String::from_utf8_lossy(bytes.cast::<PyBytes>()?.as_bytes()).into_owned()
    };
    Ok((message, type_name(exc)?))
}

pub fn fail<D: Dialect>(inner: &Mutex<D>, exc: &Bound<'_, PyAny>) -> PyResult<Vec<Event>> {
    // Like the pure build, str(exc) is not even asked for once the run is over.
    if lock(inner).framer().finished {
        return Ok(Vec::new());
    }
    let (message, code) = error_parts(exc)?;
    Ok(lock(inner).fail(&message, &code))
}

pub fn frames<'py>(py: Python<'py>, events: &[Event]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &sse::frames(events))
}

pub fn events<'py>(py: Python<'py>, events: &[Event]) -> PyResult<Bound<'py, PyList>> {
    events_to_py(py, events)
}

pub fn state<'py, D: Dialect>(py: Python<'py>, inner: &Mutex<D>) -> PyResult<Bound<'py, PyDict>> {
    let state = lock(inner).framer().state.clone();
    map_to_py(py, &state)
}

pub fn interrupts<'py>(py: Python<'py>, inner: &Mutex<Crumbs>) -> PyResult<Bound<'py, PyList>> {
    let interrupts: Vec<Map<String, Value>> = lock(inner).interrupts().to_vec();
    events_to_py(py, &interrupts)
}
