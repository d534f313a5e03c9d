//! `agui_bridge._native`: thin `PyO3` glue over `agui-bridge-core`.

mod classes;
mod convert;
mod errors;
mod fast;
mod hot;
mod sse;
mod stream;

use pyo3::prelude::*;

use classes::{ChunkTranslatorPy, CrumbTransformerPy, EventRepairerPy, Given, Options};

#[pyfunction]
#[pyo3(signature = (thread_id=None, run_id=None, state=None, *, held_ids=None, event_ids=None, first_id=None))]
fn create_agui_transformer(
    thread_id: Option<&Bound<'_, PyAny>>,
    run_id: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    held_ids: Option<&Bound<'_, PyAny>>,
    event_ids: Option<&Bound<'_, PyAny>>,
    first_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<CrumbTransformerPy> {
    let options = Options {
        held_ids,
        event_ids,
        first_id,
    };
    CrumbTransformerPy::create(thread_id, run_id, state, &options)
}

#[pyfunction]
#[pyo3(signature = (thread_id=None, run_id=None, state=None, custom_prefix=Given(None), *, held_ids=None, event_ids=None, first_id=None))]
#[allow(clippy::too_many_arguments)]
fn create_agui_translator(
    py: Python<'_>,
    thread_id: Option<&Bound<'_, PyAny>>,
    run_id: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    custom_prefix: Given,
    held_ids: Option<&Bound<'_, PyAny>>,
    event_ids: Option<&Bound<'_, PyAny>>,
    first_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<ChunkTranslatorPy> {
    let options = Options {
        held_ids,
        event_ids,
        first_id,
    };
    ChunkTranslatorPy::create(py, thread_id, run_id, state, &custom_prefix, &options)
}

#[pyfunction]
#[pyo3(signature = (thread_id=None, run_id=None, state=None, *, held_ids=None, event_ids=None, first_id=None))]
fn create_agui_repairer(
    thread_id: Option<&Bound<'_, PyAny>>,
    run_id: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    held_ids: Option<&Bound<'_, PyAny>>,
    event_ids: Option<&Bound<'_, PyAny>>,
    first_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<EventRepairerPy> {
    let options = Options {
        held_ids,
        event_ids,
        first_id,
    };
    EventRepairerPy::create(thread_id, run_id, state, &options)
}

#[pymodule(gil_used = false)]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IMPLEMENTATION", "rust")?;
    m.add_class::<CrumbTransformerPy>()?;
    m.add_class::<ChunkTranslatorPy>()?;
    m.add_class::<EventRepairerPy>()?;
    m.add_function(wrap_pyfunction!(create_agui_transformer, m)?)?;
    m.add_function(wrap_pyfunction!(create_agui_translator, m)?)?;
    m.add_function(wrap_pyfunction!(create_agui_repairer, m)?)?;
    m.add_function(wrap_pyfunction!(sse::encode_sse, m)?)?;
    Ok(())
}
