//! Runs every golden vector in `tests/vectors/*.json` through the core.

use std::fs;
use std::path::{Path, PathBuf};

use agui_bridge_core::chunks::Chunks;
use agui_bridge_core::crumbs::Crumbs;
use agui_bridge_core::events::Events;
use agui_bridge_core::fields::Input;
use agui_bridge_core::framing::Event;
use agui_bridge_core::json::{Map, Value};
use agui_bridge_core::sse::EventIds;
use agui_bridge_core::stream::Dialect;

fn vector_paths() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/vectors");
    // An unreadable folder must fail, not pass with nothing checked.
    let entries = fs::read_dir(&folder)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", folder.display()));
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    paths.sort();
    paths
}

fn text(create: &Value, key: &str) -> String {
    create
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or("generated")
        .to_owned()
}

struct Outcome {
    frames: Vec<u8>,
    next_id: u64,
    events: Vec<Event>,
    dropped: u64,
    ignored: u64,
    finished: bool,
}

/// Coalescing on (`t.coalesce(max_bytes)`, docs/coalescing.md) for a `coalesce` step.
fn coalesce<D: Dialect>(dialect: &mut D, step: &Value) -> bool {
    let Some(max_bytes) = step.get("coalesce").and_then(Value::as_u64) else {
        return false;
    };
    dialect.framer_mut().coalesce_bytes = usize::try_from(max_bytes).unwrap();
    true
}

/// The frames of the steps through `call_into`, `finish_into` and `fail_into`.
fn frames_of<D: Dialect>(mut dialect: D, steps: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for step in steps {
        if coalesce(&mut dialect, step) {
            continue;
        }
        if let Some(input) = step.get("input") {
            let _ = dialect.call_into(Input::from_json(input), &mut out);
        } else if step.get("flush").is_some() {
            dialect.flush();
            dialect.framer_mut().write_out(&mut out);
        } else if step.get("finish").is_some() {
            dialect.finish_into(&mut out);
        } else if step.get("cancel").is_some() {
            dialect.cancel_into(&mut out);
        } else if let Some(fail) = step.get("fail") {
            let message = fail["message"].as_str().unwrap_or_default();
            let code = fail["type"].as_str().unwrap_or_default();
            dialect.fail_into(message, code, &mut out);
        }
    }
    out
}

fn run<D: Dialect + Clone>(mut dialect: D, steps: &[Value], name: &str) -> Outcome {
    let sse_bytes = frames_of(dialect.clone(), steps);
    let mut events = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        if let Some(expected) = step.get("snapshot") {
            let snapshot = dialect.snapshot();
            assert_eq!(&snapshot, expected, "{name}: step {index} snapshot");
            let order = |value: &Value| serde_json::to_string(value).unwrap();
            assert_eq!(
                order(&snapshot),
                order(expected),
                "{name}: step {index} key order"
            );
        } else if let Some(input) = step.get("input") {
            let result = dialect.call(Input::from_json(input));
            match (result, step.get("error").and_then(Value::as_str)) {
                (Ok(out), None) => events.extend(out),
                (Err(error), Some(expected)) => {
                    assert_eq!(error.message(), expected, "{name}: step {index}");
                }
                (Ok(_), Some(expected)) => panic!("{name}: step {index} should raise {expected}"),
                (Err(error), None) => panic!("{name}: step {index} raised {error}"),
            }
        } else if coalesce(&mut dialect, step) {
        } else if step.get("flush").is_some() {
            dialect.flush();
            events.extend(dialect.framer_mut().take_out());
        } else if step.get("finish").is_some() {
            events.extend(dialect.finish());
        } else if step.get("cancel").is_some() {
            events.extend(dialect.cancel());
        } else if let Some(fail) = step.get("fail") {
            let message = fail["message"].as_str().unwrap_or_default();
            let code = fail["type"].as_str().unwrap_or_default();
            events.extend(dialect.fail(message, code));
        } else {
            panic!("{name}: step {index} has no input, finish or fail");
        }
    }
    let framer = dialect.framer();
    Outcome {
        frames: sse_bytes,
        next_id: framer.event_ids.next(),
        events,
        dropped: framer.dropped,
        ignored: framer.ignored,
        finished: framer.finished,
    }
}

fn check(path: &Path) {
    let vector: Value = serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap();
    let name = vector["name"].as_str().unwrap_or("?");
    let create = vector.get("create").cloned().unwrap_or(Value::Null);
    let (thread_id, run_id) = (text(&create, "thread_id"), text(&create, "run_id"));
    let state = match create.get("state") {
        Some(Value::Object(state)) => state.clone(),
        _ => Map::new(),
    };
    let steps = vector["steps"].as_array().cloned().unwrap_or_default();
    let held: Vec<String> = create
        .get("held_ids")
        .and_then(Value::as_array)
        .map(|ids| {
            ids.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let event_ids = EventIds::new(
        create
            .get("event_ids")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        create.get("first_id").and_then(Value::as_u64).unwrap_or(1),
    );
    let v1 =
        agui_bridge_core::usage::speaks_v1(create.get("protocol_version").and_then(Value::as_str));
    let outcome = match vector["dialect"].as_str() {
        Some("crumbs") => {
            let mut crumbs = Crumbs::new(thread_id, run_id, state);
            crumbs.framer_mut().hold(held);
            crumbs.framer_mut().event_ids = event_ids;
            crumbs.framer_mut().protocol_v1 = v1;
            run(crumbs, &steps, name)
        }
        Some("chunks") => {
            let prefix = create
                .get("custom_prefix")
                .and_then(Value::as_str)
                .unwrap_or("dawn");
            let mut chunks = Chunks::new(thread_id, run_id, state, prefix.to_owned());
            chunks.framer_mut().hold(held);
            chunks.framer_mut().event_ids = event_ids;
            chunks.framer_mut().protocol_v1 = v1;
            run(chunks, &steps, name)
        }
        Some("events") => {
            let mut events = Events::new(thread_id, run_id, state);
            events.framer_mut().hold(held);
            events.framer_mut().event_ids = event_ids;
            events.framer_mut().protocol_v1 = v1;
            run(events, &steps, name)
        }
        other => panic!("{name}: unknown dialect {other:?}"),
    };
    let events = Value::Array(outcome.events.iter().map(Event::to_value).collect());
    assert_eq!(events, vector["events"], "{name}: events");
    // Key order is part of the contract; `==` on maps ignores it.
    let order = |value: &Value| serde_json::to_string(value).unwrap();
    assert_eq!(
        order(&events),
        order(&vector["events"]),
        "{name}: key order"
    );
    if let Some(expected) = vector.get("sse").and_then(Value::as_str) {
        let bytes = outcome.frames;
        assert_eq!(String::from_utf8(bytes).unwrap(), expected, "{name}: sse");
    }
    assert_eq!(
        outcome.next_id,
        event_ids.next() + outcome.events.len() as u64,
        "{name}: next id"
    );
    for (key, actual) in [("dropped", outcome.dropped), ("ignored", outcome.ignored)] {
        if let Some(expected) = vector.get(key).and_then(Value::as_u64) {
            assert_eq!(actual, expected, "{name}: {key}");
        }
    }
    if let Some(expected) = vector.get("finished").and_then(Value::as_bool) {
        assert_eq!(outcome.finished, expected, "{name}: finished");
    }
}

#[test]
fn golden_vectors() {
    let paths = vector_paths();
    // As many as tests/test_vectors.py asks for: a folder emptied by mistake fails.
    assert!(paths.len() >= 60, "only {} golden vectors", paths.len());
    for path in paths {
        check(&path);
    }
}
