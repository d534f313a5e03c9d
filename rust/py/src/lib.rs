//! `agui_bridge._native`: thin `PyO3` glue over `agui-bridge-core`.

mod classes;
mod convert;
mod errors;
mod fast;
mod hot;
mod sse;
mod stream;

use pyo3::prelude::*;

use classes::{
    ChunkTranslatorPy, CrumbTransformerPy, EventRepairerPy, create_agui_repairer,
    create_agui_transformer, create_agui_translator,
};

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
