//! The three dialect pyclasses and their `create_agui_*` functions: frozen, with the dialect behind a mutex.

use std::sync::Mutex;

use agui_bridge_core::chunks::Chunks;
use agui_bridge_core::crumbs::Crumbs;
use agui_bridge_core::events::Events;
use agui_bridge_core::framing::generated_id;
use agui_bridge_core::json::{Map, Value};
use agui_bridge_core::sse::EventIds;
use agui_bridge_core::stream::Dialect;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

use crate::convert::{dict_value, type_name};
use crate::stream::{self, MessageId, lock};

/// An argument whose explicit `None` differs from leaving it out.
pub struct Given(pub Option<Py<PyAny>>);

impl<'a, 'py> FromPyObject<'a, 'py> for Given {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Given(Some(obj.to_owned().unbind())))
    }
}

#[cold]
fn not_a(name: &str, kind: &str, value: &Bound<'_, PyAny>) -> PyErr {
    match type_name(value) {
        Ok(found) => PyTypeError::new_err(format!("{name} must be {kind}, not {found}")),
        Err(error) => error,
    }
}

fn created_text(value: &Bound<'_, PyAny>, name: &str) -> PyResult<String> {
    let text = value
        .cast::<PyString>()
        .map_err(|_| not_a(name, "a string", value))?;
    // A Rust string cannot hold a lone surrogate; the pure build would fail later, in orjson.
    text.to_str()
        .map(str::to_owned)
        .map_err(|_| PyValueError::new_err(format!("{name} must be valid unicode")))
}

fn created_id(value: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<String> {
    match value {
        Some(value) if !value.is_none() => created_text(value, name),
        _ => Ok(generated_id()),
    }
}

fn created_state(state: Option<&Bound<'_, PyAny>>) -> PyResult<Map<String, Value>> {
    let Some(state) = state.filter(|state| !state.is_none()) else {
        return Ok(Map::new());
    };
    let dict = state
        .cast::<PyDict>()
        .map_err(|_| not_a("state", "a dict", state))?;
    dict_value(dict, 0).ok_or_else(|| PyValueError::new_err("state must be a JSON object"))
}

/// The ids the thread already holds: any iterable of strings but a lone string.
fn created_held(held_ids: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(held_ids) = held_ids.filter(|held_ids| !held_ids.is_none()) else {
        return Ok(Vec::new());
    };
    let wrong = || not_a("held_ids", "an iterable of strings", held_ids);
    // A lone string is iterable too, but as its characters: surely a mistake.
    if held_ids.is_instance_of::<PyString>() || held_ids.is_instance_of::<PyBytes>() {
        return Err(wrong());
    }
    let iter = held_ids.try_iter().map_err(|_| wrong())?;
    let mut held = Vec::new();
    for held_id in iter {
        let held_id = held_id?;
        let text = held_id
            .cast::<PyString>()
            .map_err(|_| not_a("each held id", "a string", &held_id))?;
        let text = text
            .to_str()
            .map_err(|_| PyValueError::new_err("held_ids must be valid unicode"))?;
        held.push(text.to_owned());
    }
    Ok(held)
}

/// The event-id options (contract section 7): a bool, and an n from 1 to 2**63 - 1.
fn created_event_ids(
    event_ids: Option<&Bound<'_, PyAny>>,
    first_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<EventIds> {
    let on = match event_ids.filter(|on| !on.is_none()) {
        None => false,
        Some(on) => on
            .cast::<PyBool>()
            .map_err(|_| not_a("event_ids", "a bool", on))?
            .is_true(),
    };
    let first = match first_id.filter(|first| !first.is_none()) {
        None => 1,
        Some(first) => {
            if !first.is_instance_of::<PyInt>() || first.is_instance_of::<PyBool>() {
                return Err(not_a("first_id", "an integer", first));
            }
            first
                .extract::<i64>()
                .ok()
                .filter(|first| *first >= 1)
                .ok_or_else(|| PyValueError::new_err("first_id must be from 1 to 2**63 - 1"))?
        }
    };
    Ok(EventIds::new(on, first.unsigned_abs()))
}

/// What the client declared (contract section 8): 1.0 or later, or not.
fn created_protocol(protocol_version: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    match protocol_version.filter(|declared| !declared.is_none()) {
        None => Ok(false),
        Some(declared) => Ok(agui_bridge_core::usage::speaks_v1(Some(&created_text(
            declared,
            "protocol_version",
        )?))),
    }
}

/// `coalesce(max_bytes)`: an integer from 1.
fn created_coalesce(max_bytes: &Bound<'_, PyAny>) -> PyResult<usize> {
    if !max_bytes.is_instance_of::<PyInt>() || max_bytes.is_instance_of::<PyBool>() {
        return Err(not_a("max_bytes", "an integer", max_bytes));
    }
    max_bytes
        .extract::<i64>()
        .ok()
        .filter(|max_bytes| *max_bytes >= 1)
        .map(|max_bytes| max_bytes.unsigned_abs() as usize)
        .ok_or_else(|| PyValueError::new_err("max_bytes must be from 1 to 2**63 - 1"))
}

/// Options both constructors take, after their positional arguments.
pub struct Options<'a, 'py> {
    pub held_ids: Option<&'a Bound<'py, PyAny>>,
    pub event_ids: Option<&'a Bound<'py, PyAny>>,
    pub first_id: Option<&'a Bound<'py, PyAny>>,
    pub protocol_version: Option<&'a Bound<'py, PyAny>>,
}

/// What both constructors take besides their dialect's own options.
pub struct Created {
    thread_id: String,
    run_id: String,
    state: Map<String, Value>,
    held: Vec<String>,
    event_ids: EventIds,
    protocol_v1: bool,
}

impl Created {
    fn into_dialect<D: Dialect>(
        self,
        make: impl FnOnce(String, String, Map<String, Value>) -> D,
    ) -> D {
        let mut dialect = make(self.thread_id, self.run_id, self.state);
        let framer = dialect.framer_mut();
        framer.hold(self.held);
        framer.event_ids = self.event_ids;
        framer.protocol_v1 = self.protocol_v1;
        dialect
    }
}

fn created(
    thread_id: Option<&Bound<'_, PyAny>>,
    run_id: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    options: &Options<'_, '_>,
) -> PyResult<Created> {
    Ok(Created {
        thread_id: created_id(thread_id, "thread_id")?,
        run_id: created_id(run_id, "run_id")?,
        state: created_state(state)?,
        held: created_held(options.held_ids)?,
        event_ids: created_event_ids(options.event_ids, options.first_id)?,
        protocol_v1: created_protocol(options.protocol_version)?,
    })
}

/// One `#[pymethods]` block per class (pyo3 allows no more without a feature),
/// holding that class's own methods and the event-stream surface both share.
macro_rules! event_stream_class {
    ($class:ty { $($own:tt)* }) => {
        #[pymethods]
        impl $class {
            $($own)*

            fn __call__<'py>(&self, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
                stream::call(item.py(), &self.inner, &self.message_id, item)
            }

            fn encode<'py>(&self, item: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
                stream::encode(item.py(), &self.inner, item)
            }

            fn encode_many<'py>(&self, items: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
                stream::encode_many(items.py(), &self.inner, items)
            }

            fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                stream::events(py, &stream::finish(&self.inner))
            }

            fn finish_encoded<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                stream::finish_encoded(py, &self.inner)
            }

            fn fail<'py>(&self, exc: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
                stream::events(exc.py(), &stream::fail(&self.inner, exc)?)
            }

            fn fail_encoded<'py>(&self, exc: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyBytes>> {
                stream::fail_encoded(&self.inner, exc)
            }

            /// Pulls items from the async generator `agen` and maps them until
            /// the run must look: `(kind, frames, value)` (the pure build's docstring).
            #[pyo3(signature = (agen, yield_at, stop_at, *first))]
            fn drive<'py>(
                &self,
                agen: &Bound<'py, PyAny>,
                yield_at: usize,
                stop_at: &Bound<'py, PyAny>,
                first: &Bound<'py, PyTuple>,
            ) -> PyResult<Bound<'py, PyTuple>> {
                stream::drive(agen.py(), &self.inner, agen, yield_at, stop_at, first)
            }

            /// `t(item)` and `t.encode(item)` from one mapping: `(events, frames)`.
            fn events_and_frames<'py>(
                &self,
                item: &Bound<'py, PyAny>,
            ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
                stream::events_and_frames(item.py(), &self.inner, item)
            }

            /// `finish()` and its frames from one mapping: `(events, frames)`.
            fn finish_events_and_frames<'py>(
                &self,
                py: Python<'py>,
            ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
                stream::end_events_and_frames(py, &self.inner, None)
            }

            /// `fail(exc)` and its frames from one mapping: `(events, frames)`.
            fn fail_events_and_frames<'py>(
                &self,
                exc: &Bound<'py, PyAny>,
            ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
                stream::end_events_and_frames(exc.py(), &self.inner, Some(exc))
            }

            /// Ends a run stopped by a cancel (contract section 8).
            fn cancel<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                stream::events(py, &stream::cancel(&self.inner))
            }

            fn cancel_encoded<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                stream::cancel_encoded(py, &self.inner)
            }

            /// `cancel()` and its frames from one mapping: `(events, frames)`.
            fn cancel_events_and_frames<'py>(
                &self,
                py: Python<'py>,
            ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
                stream::cancel_events_and_frames(py, &self.inner)
            }

            /// The client declared AG-UI 1.0 or later (contract section 8).
            #[getter]
            fn protocol_v1(&self) -> bool {
                lock(&self.inner).framer().protocol_v1
            }

            /// Coalescing: consecutive deltas for one message or call are held and
            /// merged, up to `max_bytes` (UTF-8) each, until another event, this
            /// cap or `flush()` sends them.
            fn coalesce(&self, max_bytes: &Bound<'_, PyAny>) -> PyResult<()> {
                let max_bytes = created_coalesce(max_bytes)?;
                lock(&self.inner).framer_mut().coalesce_bytes = max_bytes;
                Ok(())
            }

            /// The held delta as one event, if any.
            fn flush<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                stream::events(py, &stream::flush(&self.inner))
            }

            fn flush_encoded<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
                stream::flush_encoded(py, &self.inner)
            }

            /// `flush()` and its frames from one mapping: `(events, frames)`.
            fn flush_events_and_frames<'py>(
                &self,
                py: Python<'py>,
            ) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
                stream::flush_events_and_frames(py, &self.inner)
            }

            /// A delta is held back (coalescing): `flush()` sends it.
            #[getter]
            fn holding(&self) -> bool {
                lock(&self.inner).framer().is_holding()
            }

            /// What a reader joining now, and the store, need of the run.
            fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                stream::snapshot(py, &self.inner)
            }

            #[getter]
            fn dropped(&self) -> u64 {
                lock(&self.inner).framer().dropped
            }

            #[getter]
            fn ignored(&self) -> u64 {
                lock(&self.inner).framer().ignored
            }

            #[getter]
            fn finished(&self) -> bool {
                lock(&self.inner).framer().finished
            }

            #[getter]
            fn thread_id(&self) -> String {
                lock(&self.inner).framer().thread_id.clone()
            }

            #[getter]
            fn run_id(&self) -> String {
                lock(&self.inner).framer().run_id.clone()
            }

            /// The id the next event emitted gets (contract section 7).
            #[getter]
            fn next_id(&self) -> u64 {
                lock(&self.inner).framer().event_ids.next()
            }

            /// The id of the last event emitted: `first_id - 1` before any.
            #[getter]
            fn last_id(&self) -> u64 {
                lock(&self.inner).framer().event_ids.next() - 1
            }

            #[getter]
            fn state<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                stream::state(py, &self.inner)
            }
        }
    };
}

/// The pyclass of a dialect built from the thread, run and state alone, with
/// the shared options, and its `create_agui_*` function (the same signature).
macro_rules! plain_stream_class {
    ($class:ident, $name:tt, $dialect:ident, $factory:ident { $($own:tt)* }) => {
        #[pyclass(frozen, module = "agui_bridge._native", name = $name)]
        pub struct $class {
            inner: Mutex<$dialect>,
            message_id: MessageId,
        }

        event_stream_class!($class {
            #[new]
            #[pyo3(signature = (thread_id=None, run_id=None, state=None, *, held_ids=None, event_ids=None, first_id=None, protocol_version=None))]
            fn new(
                thread_id: Option<&Bound<'_, PyAny>>,
                run_id: Option<&Bound<'_, PyAny>>,
                state: Option<&Bound<'_, PyAny>>,
                held_ids: Option<&Bound<'_, PyAny>>,
                event_ids: Option<&Bound<'_, PyAny>>,
                first_id: Option<&Bound<'_, PyAny>>,
                protocol_version: Option<&Bound<'_, PyAny>>,
            ) -> PyResult<Self> {
                let options = Options { held_ids, event_ids, first_id, protocol_version };
                let created = created(thread_id, run_id, state, &options)?;
                Ok(Self {
                    inner: Mutex::new(created.into_dialect($dialect::new)),
                    message_id: MessageId::default(),
                })
            }

            $($own)*
        });

        #[pyfunction]
        #[pyo3(signature = (thread_id=None, run_id=None, state=None, *, held_ids=None, event_ids=None, first_id=None, protocol_version=None))]
        pub fn $factory(
            thread_id: Option<&Bound<'_, PyAny>>,
            run_id: Option<&Bound<'_, PyAny>>,
            state: Option<&Bound<'_, PyAny>>,
            held_ids: Option<&Bound<'_, PyAny>>,
            event_ids: Option<&Bound<'_, PyAny>>,
            first_id: Option<&Bound<'_, PyAny>>,
            protocol_version: Option<&Bound<'_, PyAny>>,
        ) -> PyResult<$class> {
            $class::new(thread_id, run_id, state, held_ids, event_ids, first_id, protocol_version)
        }
    };
}

plain_stream_class!(CrumbTransformerPy, "CrumbTransformer", Crumbs, create_agui_transformer {
    #[getter]
    fn interrupts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        stream::interrupts(py, &self.inner)
    }
});

plain_stream_class!(
    EventRepairerPy,
    "EventRepairer",
    Events,
    create_agui_repairer {}
);

#[pyclass(frozen, module = "agui_bridge._native", name = "ChunkTranslator")]
pub struct ChunkTranslatorPy {
    inner: Mutex<Chunks>,
    message_id: MessageId,
}

event_stream_class!(ChunkTranslatorPy {
    #[new]
    #[pyo3(signature = (thread_id, run_id, state=None, custom_prefix=Given(None), *, held_ids=None, event_ids=None, first_id=None, protocol_version=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        thread_id: Option<&Bound<'_, PyAny>>,
        run_id: Option<&Bound<'_, PyAny>>,
        state: Option<&Bound<'_, PyAny>>,
        custom_prefix: Given,
        held_ids: Option<&Bound<'_, PyAny>>,
        event_ids: Option<&Bound<'_, PyAny>>,
        first_id: Option<&Bound<'_, PyAny>>,
        protocol_version: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        // Checked first, as the pure build's constructor does.
        let custom_prefix = match &custom_prefix.0 {
            Some(prefix) => created_text(prefix.bind(py), "custom_prefix")?,
            None => "dawn".to_owned(),
        };
        let options = Options {
            held_ids,
            event_ids,
            first_id,
            protocol_version,
        };
        let created = created(thread_id, run_id, state, &options)?;
        let chunks = created.into_dialect(|thread_id, run_id, state| {
            Chunks::new(thread_id, run_id, state, custom_prefix)
        });
        Ok(Self {
            inner: Mutex::new(chunks),
            message_id: MessageId::default(),
        })
    }
});

/// `create_agui_translator`: the constructor's signature, but `thread_id` and `run_id` may be left out.
#[pyfunction]
#[pyo3(signature = (thread_id=None, run_id=None, state=None, custom_prefix=Given(None), *, held_ids=None, event_ids=None, first_id=None, protocol_version=None))]
#[allow(clippy::too_many_arguments)]
pub fn create_agui_translator(
    py: Python<'_>,
    thread_id: Option<&Bound<'_, PyAny>>,
    run_id: Option<&Bound<'_, PyAny>>,
    state: Option<&Bound<'_, PyAny>>,
    custom_prefix: Given,
    held_ids: Option<&Bound<'_, PyAny>>,
    event_ids: Option<&Bound<'_, PyAny>>,
    first_id: Option<&Bound<'_, PyAny>>,
    protocol_version: Option<&Bound<'_, PyAny>>,
) -> PyResult<ChunkTranslatorPy> {
    ChunkTranslatorPy::new(
        py,
        thread_id,
        run_id,
        state,
        custom_prefix,
        held_ids,
        event_ids,
        first_id,
        protocol_version,
    )
}
