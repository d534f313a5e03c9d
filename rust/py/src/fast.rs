//! Recognizing the hot items (text deltas, streamed tool arguments) without converting them.
//!
//! Recognition only reads (no hashing, no `__eq__`, no attribute lookup), so
//! no Python code runs: `encode_many` may hold the lock across a run of such
//! items.

use agui_bridge_core::chunks::Chunks;
use agui_bridge_core::crumbs::Crumbs;
use agui_bridge_core::events::Events;
use agui_bridge_core::fields::Input;
use agui_bridge_core::framing::Framer;
use agui_bridge_core::json;
use agui_bridge_core::stream::{Dialect, FastText};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::to_input;

/// A hot item, its strings still the caller's.
pub enum Fast<'py> {
    Text(Bound<'py, PyString>),
    /// A delta for the message the item names (the events dialect's content event).
    MessageText {
        message_id: Bound<'py, PyString>,
        delta: Bound<'py, PyString>,
    },
    ToolArgs {
        tool_call_id: Bound<'py, PyString>,
        delta: Bound<'py, PyString>,
    },
}

impl<'py> Fast<'py> {
    /// What the item does to the run; a lone surrogate sends it to the general path.
    pub fn decide<D: Dialect>(&self, dialect: &mut D) -> FastText {
        match self {
            Fast::Text(delta) => match delta.to_str() {
                Ok(text) => dialect.fast_text(text),
                Err(_) => FastText::General,
            },
            Fast::MessageText { message_id, delta } => {
                match (message_id.to_str(), delta.to_str()) {
                    (Ok(id), Ok(delta)) => dialect.fast_message_text(id, delta),
                    _ => FastText::General,
                }
            }
            Fast::ToolArgs {
                tool_call_id,
                delta,
            } => match (tool_call_id.to_str(), delta.to_str()) {
                (Ok(id), Ok(delta)) => dialect.fast_tool_args(id, delta),
                _ => FastText::General,
            },
        }
    }

    /// `decide`, recording content (sent as an event, not a frame: `call`),
    /// each string read once.
    pub fn decide_and_record<D: Dialect>(&self, dialect: &mut D) -> FastText {
        match self {
            Fast::Text(delta) => {
                let Ok(text) = delta.to_str() else {
                    return FastText::General;
                };
                let decision = dialect.fast_text(text);
                if decision == FastText::Content {
                    dialect.framer_mut().record_content(text);
                }
                decision
            }
            Fast::MessageText { message_id, delta } => {
                let (Ok(id), Ok(text)) = (message_id.to_str(), delta.to_str()) else {
                    return FastText::General;
                };
                let decision = dialect.fast_message_text(id, text);
                if decision == FastText::Content {
                    dialect.framer_mut().record_content(text);
                }
                decision
            }
            Fast::ToolArgs {
                tool_call_id,
                delta,
            } => {
                let (Ok(id), Ok(delta)) = (tool_call_id.to_str(), delta.to_str()) else {
                    return FastText::General;
                };
                let decision = dialect.fast_tool_args(id, delta);
                if decision == FastText::Content {
                    dialect.framer_mut().record_tool_args(id, delta);
                }
                decision
            }
        }
    }

    /// `decide` and `write` in one, reading each string once: the `encode_many`
    /// loop. Without `OPEN` a delta that opens a message is left as `Open`,
    /// nothing written (`drive` maps it on the general path, for its events).
    pub fn decide_and_write<D: Dialect, const OPEN: bool>(
        &self,
        dialect: &mut D,
        out: &mut Vec<u8>,
    ) -> FastText {
        match self {
            Fast::Text(delta) => {
                let Ok(text) = delta.to_str() else {
                    return FastText::General;
                };
                match dialect.fast_text(text) {
                    FastText::Content => {
                        dialect.framer_mut().write_content(out, text);
                        FastText::Content
                    }
                    FastText::Open if OPEN => {
                        write_open(dialect, text, out);
                        FastText::Content
                    }
                    decision => decision,
                }
            }
            Fast::MessageText { message_id, delta } => {
                let (Ok(id), Ok(text)) = (message_id.to_str(), delta.to_str()) else {
                    return FastText::General;
                };
                let decision = dialect.fast_message_text(id, text);
                if decision == FastText::Content {
                    dialect.framer_mut().write_content(out, text);
                }
                decision
            }
            Fast::ToolArgs {
                tool_call_id,
                delta,
            } => {
                let (Ok(id), Ok(delta)) = (tool_call_id.to_str(), delta.to_str()) else {
                    return FastText::General;
                };
                let decision = dialect.fast_tool_args(id, delta);
                if decision == FastText::Content {
                    dialect.framer_mut().write_tool_args(out, id, delta);
                }
                decision
            }
        }
    }

    /// The text of a delta `decide` found to be `Open` (valid: `decide` read it).
    pub fn open_text(&self) -> &str {
        match self {
            Fast::Text(delta) => delta.to_str().unwrap_or_default(),
            Fast::MessageText { .. } | Fast::ToolArgs { .. } => "",
        }
    }

    /// The frame of an item `decide` found to be content.
    pub fn write(&self, framer: &mut Framer, out: &mut Vec<u8>) {
        match self {
            Fast::Text(delta) | Fast::MessageText { delta, .. } => {
                framer.write_content(out, delta.to_str().unwrap_or_default());
            }
            Fast::ToolArgs {
                tool_call_id,
                delta,
            } => {
                let id = tool_call_id.to_str().unwrap_or_default();
                framer.write_tool_args(out, id, delta.to_str().unwrap_or_default());
            }
        }
    }

    /// A text delta that needs no escaping.
    pub fn plain_text(&self) -> Option<&str> {
        match self {
            Fast::Text(delta) | Fast::MessageText { delta, .. } => {
                delta.to_str().ok().filter(|text| !json::needs_escape(text))
            }
            Fast::ToolArgs { .. } => None,
        }
    }

    /// The event of an item `decide` found to be content, as a dict.
    pub fn event(
        &self,
        py: Python<'py>,
        message_id: Option<Bound<'py, PyString>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let event = PyDict::new(py);
        match self {
            // The id is the framer's (the one the message streams under), not the item's.
            Fast::Text(delta) | Fast::MessageText { delta, .. } => {
                event.set_item(intern!(py, "type"), intern!(py, "TEXT_MESSAGE_CONTENT"))?;
                event.set_item(intern!(py, "messageId"), message_id)?;
                event.set_item(intern!(py, "delta"), plain_str(py, delta)?)?;
            }
            Fast::ToolArgs {
                tool_call_id,
                delta,
            } => {
                event.set_item(intern!(py, "type"), intern!(py, "TOOL_CALL_ARGS"))?;
                event.set_item(intern!(py, "toolCallId"), plain_str(py, tool_call_id)?)?;
                event.set_item(intern!(py, "delta"), plain_str(py, delta)?)?;
            }
        }
        Ok(event)
    }
}

/// Opens a message for `delta` and appends its two frames to `out`.
pub fn write_open<D: Dialect>(dialect: &mut D, delta: &str, out: &mut Vec<u8>) {
    dialect.open_text(delta);
    dialect.framer_mut().write_out(out);
}

// An exact str, as the general path gives, whatever subclass the item held.
pub fn plain_str<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyString>> {
    if text.is_exact_instance_of::<PyString>() {
        return Ok(text.clone());
    }
    Ok(PyString::new(py, text.to_str()?))
}

// The keys are the interned strings themselves, borrowed: making a recognizer
// per call then costs no reference counting.
pub struct Recognizer<'py> {
    type_key: &'py Bound<'py, PyString>,
    delta_key: &'py Bound<'py, PyString>,
    tool_key: &'py Bound<'py, PyString>,
    message_key: &'py Bound<'py, PyString>,
    delta_name: &'static str,
    text_types: &'static [&'static str],
    args_type: Option<&'static str>,
    message_type: Option<&'static str>,
    bare_str: bool,
    // Items built by the same code share one type object: a pointer check then suffices.
    known_text: Option<Bound<'py, PyString>>,
    known_args: Option<Bound<'py, PyString>>,
    known_message: Option<Bound<'py, PyString>>,
    // Keys matched by text, by slot: a JSON parser's items share their key
    // objects (orjson caches them), so an `encode_many` checks the next
    // item's keys by pointer too.
    known_keys: [Option<Bound<'py, PyAny>>; 4],
}

// A recognized item has exactly `type` and the fields below, each a string:
// the field table must require exactly those, typed so, or the build fails.
const _: () = {
    use agui_bridge_core::fields::Kind;
    use agui_bridge_core::table::{self, CHUNKS, CRUMBS, EVENTS};
    assert!(table::same_names(
        table::required(CRUMBS, "text:delta"),
        &["delta"]
    ));
    assert!(table::same_names(
        table::required(CRUMBS, "tool:input:delta"),
        &["toolCallId", "delta"]
    ));
    assert!(matches!(table::kind_by_name("delta"), Kind::Str));
    assert!(matches!(table::kind_by_name("toolCallId"), Kind::Str));
    assert!(table::same_names(
        table::required(CHUNKS, "token"),
        &["content"]
    ));
    assert!(table::same_names(
        table::required(CHUNKS, "chunk"),
        &["content"]
    ));
    assert!(matches!(
        table::listed_kind(CHUNKS, "token", "content"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(CHUNKS, "chunk", "content"),
        Kind::Str
    ));
    assert!(table::same_names(
        table::required(EVENTS, "TEXT_MESSAGE_CONTENT"),
        &["messageId", "delta"]
    ));
    assert!(table::same_names(
        table::required(EVENTS, "TOOL_CALL_ARGS"),
        &["toolCallId", "delta"]
    ));
    assert!(matches!(
        table::listed_kind(EVENTS, "TEXT_MESSAGE_CONTENT", "messageId"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(EVENTS, "TEXT_MESSAGE_CONTENT", "delta"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(EVENTS, "TOOL_CALL_ARGS", "toolCallId"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(EVENTS, "TOOL_CALL_ARGS", "delta"),
        Kind::Str
    ));
};

pub trait FastInput {
    fn recognizer(py: Python<'_>) -> Recognizer<'_>;

    /// An item off the fast paths, as the dialect parses it (may run Python code).
    fn input(item: &Bound<'_, PyAny>) -> PyResult<Input> {
        to_input(item)
    }
}

impl FastInput for Crumbs {
    fn recognizer(py: Python<'_>) -> Recognizer<'_> {
        Recognizer::new(py, intern!(py, "delta"), "delta", &["text:delta"])
            .with_tool_args("tool:input:delta")
    }
}

impl FastInput for Events {
    // Inlined as the crumbs' is (the compiler left this one out of line: about
    // 58 instructions per event spent building it on each `encode` call).
    #[inline]
    fn recognizer(py: Python<'_>) -> Recognizer<'_> {
        // No bare text type: a content event names its message.
        Recognizer::new(py, intern!(py, "delta"), "delta", &[])
            .with_tool_args("TOOL_CALL_ARGS")
            .with_message_text("TEXT_MESSAGE_CONTENT")
    }

    /// An `ag_ui.core` event model is read through `agui_bridge.event_models`,
    /// the one rule both builds share.
    fn input(item: &Bound<'_, PyAny>) -> PyResult<Input> {
        if item.is_instance_of::<PyDict>() {
            return to_input(item);
        }
        let py = item.py();
        let event_dict = py
            .import(intern!(py, "agui_bridge.event_models"))?
            .getattr(intern!(py, "event_dict"))?;
        to_input(&event_dict.call1((item,))?)
    }
}

impl FastInput for Chunks {
    fn recognizer(py: Python<'_>) -> Recognizer<'_> {
        let mut recognizer =
            Recognizer::new(py, intern!(py, "content"), "content", &["token", "chunk"]);
        recognizer.bare_str = true;
        recognizer
    }
}

/// The fields a recognized item may have.
#[derive(Clone, Copy)]
enum Slot {
    Type,
    Delta,
    Tool,
    Message,
}

impl Slot {
    const ALL: [Slot; 4] = [Slot::Type, Slot::Delta, Slot::Tool, Slot::Message];
}

fn is_type<'py>(
    value: &Bound<'py, PyAny>,
    known: &mut Option<Bound<'py, PyString>>,
    names: &[&str],
) -> bool {
    if known.as_ref().is_some_and(|known| value.is(known)) {
        return true;
    }
    let Ok(text) = value.cast::<PyString>() else {
        return false;
    };
    let matches = text
        .to_str()
        .is_ok_and(|text| names.iter().any(|name| json::same_text(name, text)));
    // The first one met is kept: items built by one piece of code share it
    // for the whole run, and items parsed from JSON never share one (each
    // replaced cost reference counting per item and spared nothing).
    if matches && known.is_none() {
        *known = Some(text.clone());
    }
    matches
}

impl<'py> Recognizer<'py> {
    #[inline]
    fn new(
        py: Python<'py>,
        delta_key: &'py Bound<'py, PyString>,
        delta_name: &'static str,
        text_types: &'static [&'static str],
    ) -> Self {
        Self {
            type_key: intern!(py, "type"),
            delta_key,
            tool_key: intern!(py, "toolCallId"),
            message_key: intern!(py, "messageId"),
            delta_name,
            text_types,
            args_type: None,
            message_type: None,
            bare_str: false,
            known_text: None,
            known_args: None,
            known_message: None,
            known_keys: [const { None }; 4],
        }
    }

    #[inline]
    fn with_tool_args(mut self, args_type: &'static str) -> Self {
        self.args_type = Some(args_type);
        self
    }

    #[inline]
    fn with_message_text(mut self, message_type: &'static str) -> Self {
        self.message_type = Some(message_type);
        self
    }

    /// Which field a key names: by identity with the interned names or the
    /// keys met before (the usual cases), by text only for a key that is none of them.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn slot(&mut self, key: &Bound<'py, PyAny>) -> Option<Slot> {
        if key.is(self.type_key) {
            return Some(Slot::Type);
        }
        if key.is(self.delta_key) {
            return Some(Slot::Delta);
        }
        if key.is(self.tool_key) {
            return Some(Slot::Tool);
        }
        if key.is(self.message_key) {
            return Some(Slot::Message);
        }
        for (at, known) in self.known_keys.iter().enumerate() {
            if known.as_ref().is_some_and(|known| key.is(known)) {
                return Some(Slot::ALL[at]);
            }
        }
        self.slot_by_text(key)
    }

    #[inline(never)]
    fn slot_by_text(&mut self, key: &Bound<'py, PyAny>) -> Option<Slot> {
        let text = key.cast::<PyString>().ok()?;
        let slot = match text.to_str().ok()? {
            "type" => Slot::Type,
            "toolCallId" => Slot::Tool,
            "messageId" => Slot::Message,
            text if text == self.delta_name => Slot::Delta,
            _ => return None,
        };
        self.known_keys[slot as usize] = Some(key.clone());
        Some(slot)
    }

    // Inlined into the encode_many loop: measured 5% fewer instructions per item.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub fn recognize(&mut self, item: &Bound<'py, PyAny>) -> Option<Fast<'py>> {
        if self.bare_str
            && let Ok(text) = item.cast::<PyString>()
        {
            return Some(Fast::Text(text.clone()));
        }
        let dict = item.cast::<PyDict>().ok()?;
        // Any other field would need checking: leave such items to the general path.
        let len = dict.len();
        if len != 2 && !(len == 3 && (self.args_type.is_some() || self.message_type.is_some())) {
            return None;
        }
        let (mut item_type, mut delta, mut tool_call_id, mut message_id) = (None, None, None, None);
        // Stopping after the known entries spares the iterator's final probe.
        for (key, value) in dict.iter().take(len) {
            match self.slot(&key)? {
                Slot::Type => item_type = Some(value),
                Slot::Delta => delta = Some(value.cast_into::<PyString>().ok()?),
                Slot::Tool if len == 3 => {
                    tool_call_id = Some(value.cast_into::<PyString>().ok()?);
                }
                Slot::Message if len == 3 && self.message_type.is_some() => {
                    message_id = Some(value.cast_into::<PyString>().ok()?);
                }
                Slot::Tool | Slot::Message => return None,
            }
        }
        let (item_type, delta) = (item_type?, delta?);
        if len == 2 {
            return is_type(&item_type, &mut self.known_text, self.text_types)
                .then_some(Fast::Text(delta));
        }
        if let Some(message_id) = message_id {
            // Both keys cannot be there: the dict has three entries, type and delta among them.
            let message_type = [self.message_type?];
            return is_type(&item_type, &mut self.known_message, &message_type)
                .then_some(Fast::MessageText { message_id, delta });
        }
        let tool_call_id = tool_call_id?;
        let args_type = [self.args_type?];
        is_type(&item_type, &mut self.known_args, &args_type).then_some(Fast::ToolArgs {
            tool_call_id,
            delta,
        })
    }
}
