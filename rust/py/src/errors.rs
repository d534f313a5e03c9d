//! Raising the one Python exception hierarchy from Rust.

use agui_bridge_core::CrumbError as CoreError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pyo3::import_exception!(agui_bridge.errors, CrumbError);

#[cold]
#[inline(never)]
pub fn item_error(error: CoreError) -> PyErr {
    CrumbError::new_err(error.0)
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
    let err = item_error(error);
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
