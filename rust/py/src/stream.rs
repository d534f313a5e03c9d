//! The instance API both pyclasses share, generic over the dialect.
//!
//! The lock is never held while Python code can run (input conversion, dict
//! building, iteration), so a `__del__` or a generator that calls back into
//! the same transformer cannot deadlock it.

use std::cell::Cell;
use std::sync::{Mutex, MutexGuard, PoisonError};

use agui_bridge_core::CrumbError;
use agui_bridge_core::crumbs::Crumbs;
use agui_bridge_core::fields::Input;
use agui_bridge_core::framing::Event;
use agui_bridge_core::json::{Map, Value};
use agui_bridge_core::sse;
use agui_bridge_core::stream::{Dialect, FastText};
use pyo3::exceptions::{PyStopAsyncIteration, PyStopIteration};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyIterator, PyList, PySendResult, PyString, PyTuple, PyType};

use crate::convert::{events_to_py, map_to_py, maps_to_py, type_name};
use crate::errors::{item_error, many_error};
use crate::fast::{Fast, FastInput, Recognizer, plain_str, write_open};
use crate::hot::HotInput;

pub fn lock<D>(inner: &Mutex<D>) -> MutexGuard<'_, D> {
    inner.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The open message's id as a Python string, and a template of its content
/// events, made once per message rather than once per delta.
#[derive(Default)]
pub struct MessageId(Mutex<Option<Cached>>);

/// The id, and once a content event was asked for, the template.
type Cached = (Py<PyString>, Option<Py<PyDict>>);

impl MessageId {
    /// The id as a Python string; runs no Python code, so the run's lock may be held.
    fn get<'py>(&self, py: Python<'py>, id: &str) -> Bound<'py, PyString> {
        let mut slot = lock(&self.0);
        if let Some((cached, _)) = slot.as_ref()
            && cached.bind(py).to_str().is_ok_and(|cached| cached == id)
        {
            return cached.bind(py).clone();
        }
        let fresh = PyString::new(py, id);
        let stale = slot.replace((fresh.clone().unbind(), None));
        drop(slot);
        drop(stale);
        fresh
    }

    /// A `TEXT_MESSAGE_CONTENT` dict for the message `id` (from `get`), copied
    /// from the template: one copy and one store instead of three inserts.
    ///
    /// Dicts are tracked by the collector, whose finalizers may call back in:
    /// neither lock is held while one is made.
    fn content_event<'py>(
        &self,
        py: Python<'py>,
        id: &Bound<'py, PyString>,
        delta: Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let cached = lock(&self.0)
            .as_ref()
            .filter(|(cached, _)| cached.is(id))
            .and_then(|(_, template)| template.as_ref().map(|template| template.clone_ref(py)));
        let template = if let Some(template) = cached {
            template.into_bound(py)
        } else {
            let template = PyDict::new(py);
            template.set_item(intern!(py, "type"), intern!(py, "TEXT_MESSAGE_CONTENT"))?;
            template.set_item(intern!(py, "messageId"), id)?;
            template.set_item(intern!(py, "delta"), intern!(py, ""))?;
            let mut slot = lock(&self.0);
            if let Some((cached, empty)) = slot.as_mut()
                && cached.is(id)
            {
                *empty = Some(template.clone().unbind());
            }
            template
        };
        let event = template.copy()?;
        event.set_item(intern!(py, "delta"), delta)?;
        Ok(event)
    }
}

pub fn call<'py, D: Dialect + FastInput + HotInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    message_id: &MessageId,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    if let Some(fast) = D::recognizer(py).recognize(item) {
        let mut guard = lock(inner);
        match fast.decide_and_record(&mut *guard) {
            FastText::Nothing => return Ok(PyList::empty(py)),
            FastText::Content => {
                // Taken with the run's lock held, so always the id of this message.
                let id = guard
                    .framer()
                    .text_id
                    .as_deref()
                    .map(|id| message_id.get(py, id));
                // One event, as a dict: numbered, though it carries no id.
                guard.framer_mut().event_ids.skip(1);
                // Dicts are tracked by the collector: built with the lock let go.
                drop(guard);
                let event = match (&fast, id) {
                    (Fast::Text(delta) | Fast::MessageText { delta, .. }, Some(id)) => {
                        message_id.content_event(py, &id, plain_str(py, delta)?)?
                    }
                    (_, id) => fast.event(py, id)?,
                };
                return PyList::new(py, [event]);
            }
            FastText::Open => {
                guard.open_text(fast.open_text());
                let events = guard.framer_mut().take_out();
                drop(guard);
                return events_to_py(py, &events);
            }
            FastText::General => {}
        }
    }
    let hot = D::with_hot(item, |hot| {
        let mut dialect = lock(inner);
        dialect.check_hot(&hot)?;
        dialect.call_checked(|dialect| dialect.apply_hot(hot));
        Ok(dialect.framer_mut().take_out())
    });
    if let Some(events) = hot {
        return events_to_py(py, &events.map_err(item_error)?);
    }
    let input = input_of(inner, item)?;
    let events = lock(inner).call(input).map_err(item_error)?;
    events_to_py(py, &events)
}

/// Appends the frames of one item to `out`; a bad item appends nothing.
///
/// `held` is the lock kept across fast items; it is let go before anything
/// that may run Python code.
// Inlined into the encode_many loop, like `Recognizer::recognize`.
#[allow(clippy::inline_always)]
#[inline(always)]
fn write_item<'m, 'py, D: Dialect + FastInput + HotInput>(
    inner: &'m Mutex<D>,
    held: &mut Option<MutexGuard<'m, D>>,
    recognizer: &mut Recognizer<'py>,
    item: &Bound<'py, PyAny>,
    out: &mut Vec<u8>,
) -> PyResult<Result<(), CrumbError>> {
    if let Some(fast) = recognizer.recognize(item) {
        let guard = held.get_or_insert_with(|| lock(inner));
        match fast.decide_and_write::<_, true>(&mut **guard, out) {
            FastText::Nothing | FastText::Content | FastText::Open => return Ok(Ok(())),
            FastText::General => {}
        }
    }
    *held = None;
    if let Some(written) = D::with_hot(item, |hot| write_hot(inner, hot, out)) {
        return Ok(written);
    }
    let input = input_of(inner, item)?;
    Ok(lock(inner).call_into(input, out))
}

/// The item as the dialect parses it. Once the run is over nothing of it is
/// read (input after the end is dropped, rule 2): an event model is not even
/// dumped, as in the pure build, whose call drops it first.
fn input_of<D: Dialect + FastInput>(inner: &Mutex<D>, item: &Bound<'_, PyAny>) -> PyResult<Input> {
    if lock(inner).framer().finished {
        return Ok(Input::Other {
            type_name: String::new(),
        });
    }
    D::input(item)
}

/// Applies a frequent item read by `HotInput` and appends its frames to `out`.
fn write_hot<D: HotInput>(
    inner: &Mutex<D>,
    hot: D::Hot<'_>,
    out: &mut Vec<u8>,
) -> Result<(), CrumbError> {
    let mut dialect = lock(inner);
    dialect.check_hot(&hot)?;
    dialect.call_checked(|dialect| dialect.apply_hot(hot));
    dialect.framer_mut().write_out(out);
    Ok(())
}

pub fn encode<'py, D: Dialect + FastInput + HotInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut recognizer = D::recognizer(py);
    if let Some(fast) = recognizer.recognize(item) {
        let mut guard = lock(inner);
        match fast.decide(&mut *guard) {
            FastText::Nothing => return Ok(PyBytes::new(py, b"")),
            FastText::Content => {
                // The common case, a text delta with nothing to escape, is copied
                // straight into the bytes.
                if let Some(text) = fast.plain_text() {
                    let framer = guard.framer_mut();
                    // Recorded from the text, not read back from the bytes: a
                    // read spanning the frame's just-written pieces waits on
                    // them (per item, that cost more than the copy's branches).
                    framer.record_content(text);
                    let line = framer.event_ids.take();
                    let head = line.as_deref().unwrap_or_default();
                    let prefix = &framer.content_prefix;
                    let len = head.len() + sse::content_frame_len(prefix, text);
                    return PyBytes::new_with(py, len, |buffer| {
                        sse::fill_content_frame(buffer, head, prefix, text);
                        Ok(())
                    });
                }
                let mut out = Vec::with_capacity(128);
                fast.write(guard.framer_mut(), &mut out);
                return Ok(PyBytes::new(py, &out));
            }
            FastText::Open => {
                let mut out = Vec::with_capacity(256);
                write_open(&mut *guard, fast.open_text(), &mut out);
                return Ok(PyBytes::new(py, &out));
            }
            FastText::General => {}
        }
    }
    let mut out = Vec::with_capacity(256);
    write_item(inner, &mut None, &mut recognizer, item, &mut out)?.map_err(item_error)?;
    Ok(PyBytes::new(py, &out))
}

thread_local! {
    // encode_many's frames are built here and copied once into the result; a
    // buffer kept warm avoids a fresh, page-faulting allocation per batch.
    static SCRATCH: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
}

const SCRATCH_KEPT: usize = 1 << 20;

pub fn encode_many<'py, D: Dialect + FastInput + HotInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    items: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    // Taken, not borrowed: a generator that calls encode_many again gets its own.
    let mut out = SCRATCH.take();
    out.clear();
    let result = write_many(inner, items, &mut out).map(|()| PyBytes::new(py, &out));
    if out.capacity() <= SCRATCH_KEPT {
        SCRATCH.set(out);
    }
    result
}

fn write_many<'py, 'm, D: Dialect + FastInput + HotInput>(
    inner: &'m Mutex<D>,
    items: &Bound<'py, PyAny>,
    out: &mut Vec<u8>,
) -> PyResult<()> {
    let mut index = 0usize;
    let mut held = None;
    let mut recognizer = D::recognizer(items.py());
    let mut each = |item: &Bound<'py, PyAny>, held: &mut Option<MutexGuard<'m, D>>| {
        if let Err(error) = write_item(inner, held, &mut recognizer, item, out)? {
            *held = None;
            return Err(many_error(item, error, index, out));
        }
        index += 1;
        Ok(())
    };
    // Reading an exact list or tuple runs no Python code, so the lock may stay held.
    if let Ok(list) = items.cast_exact::<PyList>() {
        // By index, re-reading the length, as a list iterator does.
        let mut at = 0;
        while at < list.len() {
            each(&list.get_item(at)?, &mut held)?;
            at += 1;
        }
    } else if let Ok(tuple) = items.cast_exact::<PyTuple>() {
        for item in tuple.iter() {
            each(&item, &mut held)?;
        }
    } else {
        for item in items.try_iter()? {
            let item = item?;
            each(&item, &mut held)?;
            held = None;
        }
    }
    Ok(())
}

/// `t(item)` and `t.encode(item)` from one mapping: the events and their frames.
pub fn events_and_frames<'py, D: Dialect + FastInput + HotInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    item: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
    let mut out = Vec::with_capacity(256);
    let events = events_written(inner, item, &mut out)?;
    Ok((events_to_py(py, &events)?, PyBytes::new(py, &out)))
}

/// The events of one item, its frames appended to `out`.
fn events_written<D: Dialect + FastInput + HotInput>(
    inner: &Mutex<D>,
    item: &Bound<'_, PyAny>,
    out: &mut Vec<u8>,
) -> PyResult<Vec<Event>> {
    let hot = D::with_hot(item, |hot| {
        let mut dialect = lock(inner);
        dialect.check_hot(&hot)?;
        dialect.call_checked(|dialect| dialect.apply_hot(hot));
        Ok(dialect.framer_mut().take_out_written(out))
    });
    if let Some(events) = hot {
        return events.map_err(item_error);
    }
    let input = input_of(inner, item)?;
    lock(inner).call_written(input, out).map_err(item_error)
}

/// The events `drive` maps without stopping: a run's loop has nothing to note
/// of them (they open and close nothing, end nothing).
const STREAMED: [&str; 2] = ["TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS"];

/// `drive`: pulls the agent's items from the async generator `agen` and maps
/// them until the run must look, as `(kind, frames, value)` (see the pure
/// build's `EventStream.drive`, the same rules).
pub fn drive<'py, D: Dialect + FastInput + HotInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    agen: &Bound<'py, PyAny>,
    yield_at: usize,
    stop_at: &Bound<'py, PyAny>,
    first: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut out = SCRATCH.take();
    out.clear();
    let stopped = drive_into(py, inner, agen, yield_at, stop_at, first, &mut out);
    let frames = PyBytes::new(py, &out);
    if out.capacity() <= SCRATCH_KEPT {
        SCRATCH.set(out);
    }
    let (kind, value) = stopped?;
    PyTuple::new(py, [kind.into_any(), frames.into_any(), value])
}

type Stopped<'py> = (Bound<'py, PyString>, Bound<'py, PyAny>);

/// An async generator's own step type (`agui_bridge.awaiting.ASEND`), stepped as it is.
static ASEND: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// `step.send(None)` for what `__anext__` gave, as `async for` would resume
/// it: an async generator's step itself; any other step as
/// `agui_bridge.awaiting` says (the pure build's rule, its errors included).
/// Gives the iterator that was resumed, for `follow` to finish.
fn send_none<'py>(
    step: Bound<'py, PyAny>,
    none: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyAny>, PySendResult<'py>)> {
    let py = step.py();
    let iterator = if step
        .get_type()
        .is(ASEND.import(py, "agui_bridge.awaiting", "ASEND")?)
    {
        step
    } else {
        py.import(intern!(py, "agui_bridge.awaiting"))?
            .getattr(intern!(py, "step_iterator"))?
            .call1((step,))?
    };
    // `PyIter_Send`: an iterator is resumed by `next`; a coroutine, which is
    // none, by its `send`.
    if let Ok(resumed) = iterator.cast::<PyIterator>() {
        let sent = resumed.send(none)?;
        return Ok((iterator, sent));
    }
    match iterator.call_method1(intern!(py, "send"), (none,)) {
        Ok(awaited) => Ok((iterator, PySendResult::Next(awaited))),
        Err(error) => Ok((iterator, PySendResult::Return(returned(py, error)?))),
    }
}

/// The value a `StopIteration` carries; any other error as it is.
fn returned(py: Python<'_>, error: PyErr) -> PyResult<Bound<'_, PyAny>> {
    if error.is_instance_of::<PyStopIteration>(py) {
        return error.value(py).getattr(intern!(py, "value"));
    }
    Err(error)
}

fn drive_into<'py, D: Dialect + FastInput + HotInput>(
    py: Python<'py>,
    inner: &Mutex<D>,
    agen: &Bound<'py, PyAny>,
    yield_at: usize,
    stop_at: &Bound<'py, PyAny>,
    first: &Bound<'py, PyTuple>,
    out: &mut Vec<u8>,
) -> PyResult<Stopped<'py>> {
    let raised = |error: PyErr| {
        Ok((
            intern!(py, "raise").clone(),
            error.into_value(py).into_any().into_bound(py),
        ))
    };
    let mut recognizer = D::recognizer(py);
    let mut given = first.iter();
    let none = py.None().into_bound(py);
    // Looked up once per call: `call_method0` per item looked the slot up in the
    // type and sliced an argument tuple each time (a few % of a stream's CPU).
    let mut anext: Option<Bound<'py, PyAny>> = None;
    loop {
        let item = if let Some(item) = given.next() {
            item
        } else {
            // What `async for` does per item, without its bytecode: the
            // generator's next step, its yielded item handed back as a return.
            let method = match &anext {
                Some(method) => method,
                None => match agen.getattr(intern!(py, "__anext__")) {
                    Ok(method) => anext.insert(method),
                    Err(error) => return raised(error),
                },
            };
            let sent = match method.call0() {
                Ok(step) => send_none(step, &none),
                // `__anext__` itself may end the iteration or give the item at once.
                Err(error) => {
                    returned(py, error).map(|item| (none.clone(), PySendResult::Return(item)))
                }
            };
            match sent {
                Ok((_, PySendResult::Return(item))) => item,
                Ok((step, PySendResult::Next(awaited))) => {
                    let pending = PyTuple::new(py, [step, awaited])?;
                    return Ok((intern!(py, "await").clone(), pending.into_any()));
                }
                Err(error) if error.is_instance_of::<PyStopAsyncIteration>(py) => {
                    return Ok((intern!(py, "end").clone(), none));
                }
                Err(error) => return raised(error),
            }
        };
        if item.is(stop_at) {
            return Ok((intern!(py, "item").clone(), item));
        }
        // Content for what is open (or nothing at all) on the fast path; anything
        // else, and a delta that opens a message, on the general one.
        let fast = recognizer.recognize(&item).is_some_and(|fast| {
            let decision = fast.decide_and_write::<_, false>(&mut *lock(inner), out);
            matches!(decision, FastText::Content | FastText::Nothing)
        });
        if !fast {
            match events_written(inner, &item, out) {
                Ok(events) if events.iter().any(|event| !STREAMED.contains(&event.kind)) => {
                    return Ok((
                        intern!(py, "events").clone(),
                        events_to_py(py, &events)?.into_any(),
                    ));
                }
                Ok(_) => {}
                Err(error) => return raised(error),
            }
        }
        if out.len() >= yield_at {
            return Ok((intern!(py, "full").clone(), none));
        }
    }
}

/// `finish()` or `fail(exc)` from one mapping: the events and their frames.
pub fn end_events_and_frames<'py, D: Dialect>(
    py: Python<'py>,
    inner: &Mutex<D>,
    exc: Option<&Bound<'py, PyAny>>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
    let mut out = Vec::new();
    let events = match exc {
        None => lock(inner).finish_written(&mut out),
        // Like the pure build, str(exc) is not even asked for once the run is over.
        Some(_) if lock(inner).framer().finished => Vec::new(),
        Some(exc) => {
            let (message, code) = error_parts(exc)?;
            lock(inner).fail_written(&message, &code, &mut out)
        }
    };
    Ok((events_to_py(py, &events)?, PyBytes::new(py, &out)))
}

pub fn snapshot<'py, D: Dialect>(
    py: Python<'py>,
    inner: &Mutex<D>,
) -> PyResult<Bound<'py, PyDict>> {
    let Value::Object(snapshot) = lock(inner).snapshot() else {
        unreachable!("a snapshot is an object")
    };
    map_to_py(py, &snapshot)
}

pub fn cancel<D: Dialect>(inner: &Mutex<D>) -> Vec<Event> {
    lock(inner).cancel()
}

pub fn cancel_encoded<'py, D: Dialect>(py: Python<'py>, inner: &Mutex<D>) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(256);
    lock(inner).cancel_into(&mut out);
    PyBytes::new(py, &out)
}

/// `cancel()` from one mapping: the events and their frames.
pub fn cancel_events_and_frames<'py, D: Dialect>(
    py: Python<'py>,
    inner: &Mutex<D>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
    let mut out = Vec::new();
    let events = lock(inner).cancel_written(&mut out);
    Ok((events_to_py(py, &events)?, PyBytes::new(py, &out)))
}

/// The delta held back by coalescing, as events (none when nothing is held).
pub fn flush<D: Dialect>(inner: &Mutex<D>) -> Vec<Event> {
    let mut dialect = lock(inner);
    dialect.flush();
    dialect.framer_mut().take_out()
}

pub fn flush_encoded<'py, D: Dialect>(py: Python<'py>, inner: &Mutex<D>) -> Bound<'py, PyBytes> {
    let mut out = Vec::new();
    {
        let mut dialect = lock(inner);
        dialect.flush();
        dialect.framer_mut().write_out(&mut out);
    }
    PyBytes::new(py, &out)
}

pub fn flush_events_and_frames<'py, D: Dialect>(
    py: Python<'py>,
    inner: &Mutex<D>,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyBytes>)> {
    let mut out = Vec::new();
    let events = {
        let mut dialect = lock(inner);
        dialect.flush();
        dialect.framer_mut().take_out_written(&mut out)
    };
    Ok((events_to_py(py, &events)?, PyBytes::new(py, &out)))
}

pub fn finish<D: Dialect>(inner: &Mutex<D>) -> Vec<Event> {
    lock(inner).finish()
}

pub fn finish_encoded<'py, D: Dialect>(py: Python<'py>, inner: &Mutex<D>) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(256);
    lock(inner).finish_into(&mut out);
    PyBytes::new(py, &out)
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

pub fn fail_encoded<'py, D: Dialect>(
    inner: &Mutex<D>,
    exc: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let mut out = Vec::new();
    if !lock(inner).framer().finished {
        let (message, code) = error_parts(exc)?;
        lock(inner).fail_into(&message, &code, &mut out);
    }
    Ok(PyBytes::new(exc.py(), &out))
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
    maps_to_py(py, &interrupts)
}
