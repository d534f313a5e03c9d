//! The run's token usage (contract section 8): what the agent reported, summed
//! per provider and model, as AG-UI 1.0 `TokenUsage[]`.
//!
//! A report is read by name (docs/contract-notes.md): the `TokenUsage` names
//! first, then the usual provider spellings; a count is an integer from 0 to
//! 2**53 - 1 (what survives a JSON round trip), anything else is not a count.

use crate::json::{Map, Value};

/// The `TokenUsage` counts, in the order they are written.
const COUNTS: [&str; 6] = [
    "inputTokens",
    "outputTokens",
    "totalTokens",
    "reasoningTokens",
    "cachedInputTokens",
    "cacheWriteInputTokens",
];

/// Where each count may be found in a report, first match wins.
const PATHS: [&[&[&str]]; 6] = [
    &[
        &["inputTokens"],
        &["input_tokens"],
        &["prompt_tokens"],
        &["promptTokens"],
    ],
    &[
        &["outputTokens"],
        &["output_tokens"],
        &["completion_tokens"],
        &["completionTokens"],
    ],
    &[&["totalTokens"], &["total_tokens"]],
    &[
        &["reasoningTokens"],
        &["reasoning_tokens"],
        &["completion_tokens_details", "reasoning_tokens"],
        &["output_tokens_details", "reasoning_tokens"],
    ],
    &[
        &["cachedInputTokens"],
        &["prompt_tokens_details", "cached_tokens"],
        &["input_tokens_details", "cached_tokens"],
        &["cache_read_input_tokens"],
    ],
    &[&["cacheWriteInputTokens"], &["cache_creation_input_tokens"]],
];

/// The version `RUN_STARTED.protocolVersion` names: the one this server speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// The largest count a JSON number carries exactly.
pub const MAX_COUNT: u64 = (1 << 53) - 1;

fn count_at(report: &Map<String, Value>, path: &[&str]) -> Option<u64> {
    let (last, parents) = path.split_last()?;
    let mut map = report;
    for parent in parents {
        map = map.get(*parent)?.as_object()?;
    }
    map.get(*last)?.as_u64().filter(|count| *count <= MAX_COUNT)
}

fn label(report: &Map<String, Value>, key: &str) -> Option<String> {
    report.get(key).and_then(Value::as_str).map(str::to_owned)
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    provider: Option<String>,
    model: Option<String>,
    counts: [Option<u64>; 6],
}

#[derive(Debug, Clone, Default)]
pub struct Usage {
    /// In order of first report.
    entries: Vec<Entry>,
}

impl Usage {
    /// Adds one report; `model` (a crumb's own `model`) wins over the report's.
    pub fn add(&mut self, report: &Value, model: Option<&str>) {
        let Value::Object(report) = report else {
            return;
        };
        let mut counts = [None; 6];
        for (slot, paths) in counts.iter_mut().zip(PATHS) {
            *slot = paths.iter().find_map(|path| count_at(report, path));
        }
        if counts.iter().all(Option::is_none) {
            return;
        }
        let provider = label(report, "provider");
        let model = model.map(str::to_owned).or_else(|| label(report, "model"));
        let found = self
            .entries
            .iter()
            .position(|entry| entry.provider == provider && entry.model == model);
        let at = found.unwrap_or_else(|| {
            self.entries.push(Entry {
                provider,
                model,
                counts: [None; 6],
            });
            self.entries.len() - 1
        });
        for (total, count) in self.entries[at].counts.iter_mut().zip(counts) {
            if let Some(count) = count {
                *total = Some(total.unwrap_or(0).saturating_add(count).min(MAX_COUNT));
            }
        }
    }

    /// Adds the entries of a `TokenUsage[]` (an events-dialect terminal event's).
    pub fn add_all(&mut self, list: &Value) {
        if let Value::Array(list) = list {
            for report in list {
                self.add(report, None);
            }
        }
    }

    /// `TokenUsage[]`, or `None` when nothing was reported.
    pub fn to_value(&self) -> Option<Value> {
        if self.entries.is_empty() {
            return None;
        }
        let list = self.entries.iter().map(|entry| {
            let mut out = Map::new();
            if let Some(provider) = &entry.provider {
                out.insert("provider".to_owned(), provider.as_str().into());
            }
            if let Some(model) = &entry.model {
                out.insert("model".to_owned(), model.as_str().into());
            }
            for (name, count) in COUNTS.iter().zip(entry.counts) {
                if let Some(count) = count {
                    out.insert((*name).to_owned(), count.into());
                }
            }
            Value::Object(out)
        });
        Some(Value::Array(list.collect()))
    }
}

/// Whether a client's declared `protocolVersion` is 1.0 or later: dot-separated
/// digits with a major of at least 1. Anything else (absent, `0.0.58`, text
/// that is no version) gets the 0.0.x stream.
pub fn speaks_v1(declared: Option<&str>) -> bool {
    let Some(declared) = declared else {
        return false;
    };
    let parts: Vec<&str> = declared.split('.').collect();
    if parts
        .iter()
        .any(|part| part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    !parts[0].trim_start_matches('0').is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sums_per_provider_and_model() {
        let mut usage = Usage::default();
        usage.add(
            &json!({"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7,
                    "completion_tokens_details": {"reasoning_tokens": 2}}),
            Some("m"),
        );
        usage.add(&json!({"inputTokens": 1, "provider": "p"}), Some("m"));
        usage.add(
            &json!({"input_tokens": 5, "output_tokens": true}),
            Some("m"),
        );
        usage.add(&json!({"nothing": 1}), Some("x"));
        assert_eq!(
            usage.to_value().unwrap(),
            json!([
                {"model": "m", "inputTokens": 8, "outputTokens": 4, "totalTokens": 7, "reasoningTokens": 2},
                {"provider": "p", "model": "m", "inputTokens": 1}
            ])
        );
    }

    #[test]
    fn versions() {
        assert!(speaks_v1(Some("1.0")));
        assert!(speaks_v1(Some("2")));
        assert!(speaks_v1(Some("01.0")));
        assert!(!speaks_v1(Some("0.0.58")));
        assert!(!speaks_v1(Some("1.0-beta")));
        assert!(!speaks_v1(Some("")));
        assert!(!speaks_v1(None));
    }
}
