//! Raising the one Python exception hierarchy from Rust.

use agui_bridge_core::CrumbError as CoreError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

pyo3::import_exception!(agui_bridge.errors, CrumbError);

/// The error for `item`, naming its `type` as given even when that holds a lone surrogate.
///
/// The core only ever sees such a type lossily, and every message that names
/// the type starts with it.
#[cold]
#[inline(never)]
pub fn item_error(item: &Bound<'_, PyAny>, error: CoreError) -> PyErr {
    match given_type(item, &error.0) {
        Some(message) => CrumbError::new_err(message.unbind()),
        None => CrumbError::new_err(error.0),
    }
}

fn given_type<'py>(item: &Bound<'py, PyAny>, message: &str) -> Option<Bound<'py, PyAny>> {
    let item_type = item.cast::<PyDict>().ok()?.get_item("type").ok()??;
    let item_type = item_type.cast::<PyString>().ok()?;
    if item_type.to_str().is_ok() {
        return None;
    }
    let lossy = item_type.to_string_lossy();
    let rest = message.strip_prefix(lossy.as_ref())?.strip_prefix(": ")?;
    item_type.add(format!(": {rest}")).ok()
}

/// The error of `encode_many`, carrying the position and the bytes already applied.
#[cold]
#[inline(never)]
pub fn many_error(
    item: &Bound<'_, PyAny>,
    error: CoreError,
    index: usize,
    partial: &[u8],
) -> PyErr {
    let py = item.py();
    let err = item_error(item, error);
    let value = err.value(py);
    if let Err(failed) = value
        .setattr("index", index)
        .and_then(|()| value.setattr("partial", PyBytes::new(py, partial)))
    {
        return failed;
    }
    err
}

#[cold]
#[inline(never)]
pub fn message_error(message: String) -> PyErr {
    CrumbError::new_err(message)
}

/// A message that starts with `item_type`, as given.
#[cold]
#[inline(never)]
pub fn typed_error(item_type: &Bound<'_, PyString>, rest: &str) -> PyErr {
    match item_type.add(rest) {
        Ok(message) => CrumbError::new_err(message.unbind()),
        Err(error) => error,
    }
}
