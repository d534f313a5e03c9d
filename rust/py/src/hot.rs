//! Reading the frequent non-text items (tool calls, results, steps) straight from their dicts.
//!
//! The general path turns an item into an `Input`, a tree of owned values,
//! then parses and checks it. These readers skip all that for the few shapes
//! agents emit most, and only for items the parser would accept as they are:
//! exactly the fields of the row (no extra field, none null, every key a
//! string), strings valid Unicode, JSON fields JSON. Anything else returns
//! `None` and takes the general path, which raises or maps it as always.
//!
//! Reading runs no Python code (no hashing, no `__eq__`): keys are matched by
//! their text, as `to_input` does.

use agui_bridge_core::CrumbError;
use agui_bridge_core::chunks::{self, Chunks};
use agui_bridge_core::crumbs::{self, Crumbs};
use agui_bridge_core::events::{self, Events, Texts};
use agui_bridge_core::fields::Kind;
use agui_bridge_core::stream::Dialect;
use agui_bridge_core::table;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use crate::convert::json_text;

/// A dialect whose frequent items can be read without the general path.
pub trait HotInput: Dialect {
    type Hot<'a>;

    /// What the parser would refuse of `hot` given the run (a held id).
    fn check_hot(&self, hot: &Self::Hot<'_>) -> Result<(), CrumbError>;

    fn apply_hot(&mut self, hot: Self::Hot<'_>);

    /// When `item` is a frequent item, calls `run` with it, borrowed, and returns its result.
    fn with_hot<R>(item: &Bound<'_, PyAny>, run: impl FnOnce(Self::Hot<'_>) -> R) -> Option<R>;
}

/// The fields of a dict item: its `type`, and in `slots` the value of each of
/// `names`, with a bit set in the mask for each one present.
struct Read<'py, const N: usize> {
    item_type: Bound<'py, PyString>,
    slots: [Option<Bound<'py, PyAny>>; N],
    present: u8,
}

fn read<'py, const N: usize>(item: &Bound<'py, PyAny>, names: [&str; N]) -> Option<Read<'py, N>> {
    let dict = item.cast::<PyDict>().ok()?;
    let len = dict.len();
    if len > N + 1 {
        return None;
    }
    let mut item_type = None;
    let mut slots = [const { None }; N];
    let mut present = 0u8;
    // Stopping after the known entries spares the iterator's final probe.
    for (key, value) in dict.iter().take(len) {
        let key = key.cast::<PyString>().ok()?.to_str().ok()?;
        if key == "type" {
            if item_type.is_some() {
                return None;
            }
            item_type = Some(value.cast_into::<PyString>().ok()?);
            continue;
        }
        let at = names.iter().position(|name| *name == key)?;
        // Two str subclass keys may hold the same text: leave that to the general path.
        if present & (1 << at) != 0 {
            return None;
        }
        present |= 1 << at;
        slots[at] = Some(value);
    }
    let item_type = item_type?;
    // A lone surrogate makes it no type at all (rule 11).
    item_type.to_str().ok()?;
    Some(Read {
        item_type,
        slots,
        present,
    })
}

impl<const N: usize> Read<'_, N> {
    fn text(&self, at: usize) -> Option<&str> {
        let value = self.slots[at].as_ref()?.cast::<PyString>().ok()?;
        value.to_str().ok()
    }

    /// The compact JSON of a field that is present and not `None`.
    fn json(&self, at: usize) -> Option<String> {
        let value = self.slots[at].as_ref()?;
        if value.is_none() {
            return None;
        }
        json_text(value)
    }

    /// A result's content: the value if a string, else its compact JSON.
    fn content(&self, at: usize) -> Option<String> {
        let value = self.slots[at].as_ref()?;
        if value.is_instance_of::<PyString>() {
            return self.text(at).map(str::to_owned);
        }
        self.json(at)
    }

    fn type_text(&self) -> &str {
        self.item_type.to_str().unwrap_or_default()
    }
}

/// The slot mask of `names` among `slots`. A name with no slot fails the build:
/// the reader cannot check a field it does not read.
const fn slot_mask(names: &[&str], slots: &[&str]) -> u8 {
    let mut mask = 0;
    let mut name = 0;
    while name < names.len() {
        let mut at = 0;
        while at < slots.len() && !table::same(slots[at], names[name]) {
            at += 1;
        }
        assert!(
            at < slots.len(),
            "a required field the fast path does not read"
        );
        mask |= 1 << at;
        name += 1;
    }
    mask
}

// The crumb fields the hot rows use, by slot.
const TOOL_CALL_ID: usize = 0;
const TOOL_NAME: usize = 1;
const INPUT: usize = 2;
const RESULT: usize = 3;
const STEP_NAME: usize = 4;
const CRUMB_FIELDS: [&str; 5] = ["toolCallId", "toolName", "input", "result", "stepName"];

/// The fields a hot crumb must have, exactly: its required fields in the field table.
const fn crumb_needs(crumb_type: &str) -> u8 {
    slot_mask(table::required(table::CRUMBS, crumb_type), &CRUMB_FIELDS)
}

const INPUT_START: u8 = crumb_needs("tool:input:start");
const INPUT_END: u8 = crumb_needs("tool:input:end");
const CALL: u8 = crumb_needs("tool:call");
const RESULT_NEEDS: u8 = crumb_needs("tool:result");
const STEP_START: u8 = crumb_needs("pipeline:step:start");
const STEP_END: u8 = crumb_needs("pipeline:step:end");

// The reader takes these fields as strings (`text`) or JSON (`json`, `content`):
// the table must type them so.
const _: () = {
    assert!(matches!(table::kind_by_name("toolCallId"), Kind::Str));
    assert!(matches!(table::kind_by_name("toolName"), Kind::Str));
    assert!(matches!(table::kind_by_name("input"), Kind::Json));
    assert!(matches!(table::kind_by_name("result"), Kind::Json));
    assert!(matches!(table::kind_by_name("stepName"), Kind::Str));
};

impl HotInput for Crumbs {
    type Hot<'a> = crumbs::Hot<'a>;

    fn check_hot(&self, hot: &crumbs::Hot<'_>) -> Result<(), CrumbError> {
        Crumbs::check_hot(self, hot)
    }

    fn apply_hot(&mut self, hot: crumbs::Hot<'_>) {
        Crumbs::apply_hot(self, hot);
    }

    fn with_hot<R>(item: &Bound<'_, PyAny>, run: impl FnOnce(crumbs::Hot<'_>) -> R) -> Option<R> {
        let read = read(item, CRUMB_FIELDS)?;
        let needs = |mask: u8| read.present == mask;
        let hot = match read.type_text() {
            "tool:input:start" if needs(INPUT_START) => crumbs::Hot::InputStart {
                tool_call_id: read.text(TOOL_CALL_ID)?,
                tool_name: read.text(TOOL_NAME)?,
            },
            "tool:input:end" if needs(INPUT_END) => crumbs::Hot::InputEnd {
                tool_call_id: read.text(TOOL_CALL_ID)?,
            },
            "tool:call" if needs(CALL) => {
                let args = read.json(INPUT)?;
                return Some(run(crumbs::Hot::Call {
                    tool_call_id: read.text(TOOL_CALL_ID)?,
                    tool_name: read.text(TOOL_NAME)?,
                    args: &args,
                }));
            }
            "tool:result" if needs(RESULT_NEEDS) => crumbs::Hot::Result {
                tool_call_id: read.text(TOOL_CALL_ID)?,
                content: read.content(RESULT)?,
            },
            "pipeline:step:start" if needs(STEP_START) => crumbs::Hot::StepStart {
                step_name: read.text(STEP_NAME)?,
            },
            "pipeline:step:end" if needs(STEP_END) => crumbs::Hot::StepEnd {
                step_name: read.text(STEP_NAME)?,
            },
            _ => return None,
        };
        Some(run(hot))
    }
}

// The chunk fields the hot rows use, by slot.
const ID: usize = 0;
const NAME: usize = 1;
const CHUNK_INPUT: usize = 2;
const OUTPUT: usize = 3;
const CHUNK_FIELDS: [&str; 4] = ["id", "name", "input", "output"];

/// A hot chunk's required fields (the field table), and the fields the reader
/// takes for its row (anything else goes to the general path).
const fn chunk_needs(chunk_type: &str) -> u8 {
    slot_mask(table::required(table::CHUNKS, chunk_type), &CHUNK_FIELDS)
}

const TOOL_CALL_NEEDS: u8 = chunk_needs("tool_call");
const TOOL_CALL_READS: u8 = slot_mask(&["id", "name", "input"], &CHUNK_FIELDS);
const TOOL_RESULT_NEEDS: u8 = chunk_needs("tool_result");
const TOOL_RESULT_READS: u8 = slot_mask(&["id", "output"], &CHUNK_FIELDS);

const _: () = {
    assert!(matches!(
        table::listed_kind(table::CHUNKS, "tool_call", "id"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(table::CHUNKS, "tool_call", "name"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(table::CHUNKS, "tool_call", "input"),
        Kind::Json
    ));
    assert!(matches!(
        table::listed_kind(table::CHUNKS, "tool_result", "id"),
        Kind::Str
    ));
    assert!(matches!(
        table::listed_kind(table::CHUNKS, "tool_result", "output"),
        Kind::Json
    ));
};

impl HotInput for Chunks {
    type Hot<'a> = chunks::Hot<'a>;

    fn check_hot(&self, hot: &chunks::Hot<'_>) -> Result<(), CrumbError> {
        Chunks::check_hot(self, hot)
    }

    fn apply_hot(&mut self, hot: chunks::Hot<'_>) {
        Chunks::apply_hot(self, hot);
    }

    fn with_hot<R>(item: &Bound<'_, PyAny>, run: impl FnOnce(chunks::Hot<'_>) -> R) -> Option<R> {
        let read = read(item, CHUNK_FIELDS)?;
        let has = |at: usize| read.present & (1 << at) != 0;
        // The row's required fields present, and no field the reader does not take.
        let fits =
            |needs: u8, reads: u8| read.present & needs == needs && read.present & !reads == 0;
        match read.type_text() {
            "tool_call" if fits(TOOL_CALL_NEEDS, TOOL_CALL_READS) => {
                let id = if has(ID) { Some(read.text(ID)?) } else { None };
                // A non-finite float input is null once normal (rule 11), and a
                // null input means none: the args are `{}` as for an absent one.
                let args = match has(CHUNK_INPUT).then(|| read.json(CHUNK_INPUT)) {
                    Some(Some(args)) if args != "null" => args,
                    Some(None) => return None,
                    _ => "{}".to_owned(),
                };
                Some(run(chunks::Hot::ToolCall {
                    id,
                    name: read.text(NAME)?,
                    args: &args,
                }))
            }
            // An absent output (content "null") is left to the general path.
            "tool_result" if fits(TOOL_RESULT_NEEDS | (1 << OUTPUT), TOOL_RESULT_READS) => {
                Some(run(chunks::Hot::ToolResult {
                    id: read.text(ID)?,
                    content: read.content(OUTPUT)?,
                }))
            }
            _ => None,
        }
    }
}

/// An event read by `read_event`: its type, for errors, and its row and fields, borrowed.
pub struct EventHot<'a> {
    event_type: &'a str,
    row: events::Row,
    strings: events::Strings<'a>,
}

/// The most fields an events dict may have for the reader (more: the general path).
const EVENT_FIELDS: usize = 8;

/// An event of a row whose listed fields are all strings (`events::string_row`),
/// read as the parser would take it: every key a string, the type and each
/// listed field once, required ones present, listed ones strings (a `None`
/// one is absent). Fields the row does not list are not read, as in the parser.
/// The strings stay the item's: `with_hot` runs its closure while they live.
fn read_event<R>(item: &Bound<'_, PyAny>, run: impl FnOnce(EventHot<'_>) -> R) -> Option<R> {
    let dict = item.cast::<PyDict>().ok()?;
    let len = dict.len();
    if len > EVENT_FIELDS {
        return None;
    }
    let mut entries: [Option<(Bound<'_, PyString>, Bound<'_, PyAny>)>; EVENT_FIELDS] =
        [const { None }; EVENT_FIELDS];
    // Stopping after the known entries spares the iterator's final probe.
    for (at, (key, value)) in dict.iter().take(len).enumerate() {
        entries[at] = Some((key.cast_into::<PyString>().ok()?, value));
    }
    let mut keys = [""; EVENT_FIELDS];
    let mut event_type = None;
    for (at, (key, value)) in entries[..len].iter().flatten().enumerate() {
        // A key that is no valid text: the general path decides.
        keys[at] = key.to_str().ok()?;
        if keys[at] == "type" {
            if event_type.is_some() {
                return None;
            }
            event_type = Some(value.cast::<PyString>().ok()?.to_str().ok()?);
        }
    }
    let event_type = event_type?;
    let (row, required, kinds) = events::string_row(event_type)?;
    let mut strings = events::Strings::new(kinds);
    let mut present = 0u8;
    for ((_, value), name) in entries[..len].iter().flatten().zip(keys) {
        // Fields the row does not list are not read.
        let Some(at) = kinds.iter().position(|(listed, _)| *listed == name) else {
            continue;
        };
        // Two str subclass keys may hold the same text: leave that to the general path.
        if present & (1 << at) != 0 {
            return None;
        }
        present |= 1 << at;
        if !value.is_none() {
            strings.set(at, value.cast::<PyString>().ok()?.to_str().ok()?);
        }
    }
    // Absent or null: only an optional field may be.
    if required.iter().any(|name| strings.text(name).is_none()) {
        return None;
    }
    Some(run(EventHot {
        event_type,
        row,
        strings,
    }))
}

impl HotInput for Events {
    type Hot<'a> = EventHot<'a>;

    fn check_hot(&self, hot: &EventHot<'_>) -> Result<(), CrumbError> {
        // Input after the end is dropped, never refused (rule 2).
        if self.framer().finished {
            return Ok(());
        }
        self.check_row(hot.event_type, hot.row, &hot.strings)
    }

    fn apply_hot(&mut self, hot: EventHot<'_>) {
        self.apply_strings(hot.row, &hot.strings);
    }

    fn with_hot<R>(item: &Bound<'_, PyAny>, run: impl FnOnce(EventHot<'_>) -> R) -> Option<R> {
        read_event(item, run)
    }
}
