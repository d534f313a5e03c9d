//! One AG-UI event: `type` first, then its fields in contract order (rule 8).

use std::ops::Index;

use crate::fields::Key;
use crate::json::{Map, Value};

/// Field names are the contract's own, so they are static: no allocation, no hashing.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub kind: &'static str,
    pub fields: Vec<(&'static str, Value)>,
}

impl Event {
    pub fn new(kind: &'static str) -> Self {
        // No event has more than six fields: one allocation, no regrowth.
        Self {
            kind,
            fields: Vec::with_capacity(6),
        }
    }

    pub fn put(&mut self, key: &'static str, value: impl Into<Value>) {
        self.fields.push((key, value.into()));
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields
            .iter()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value)
    }

    /// The event as a JSON object, `type` first.
    pub fn to_value(&self) -> Value {
        let mut map = Map::with_capacity(self.fields.len() + 1);
        map.insert("type".to_owned(), Value::String(self.kind.to_owned()));
        for (key, value) in &self.fields {
            map.insert((*key).to_owned(), value.clone());
        }
        Value::Object(map)
    }
}

static NULL: Value = Value::Null;

impl Index<&str> for Event {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

/// The checked fields of an input item, in item order.
///
/// Items have a handful of fields: a vector beats a hash map here.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(Vec<(Key, Value)>);

impl Fields {
    pub fn with_capacity(capacity: usize) -> Self {
        Self(Vec::with_capacity(capacity))
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Adds a field the item does not have yet (item keys are unique).
    pub fn insert(&mut self, key: Key, value: Value) {
        debug_assert!(!self.contains_key(&key));
        self.0.push((key, value));
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let at = self.0.iter().position(|(name, _)| name == key)?;
        Some(self.0.remove(at).1)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.0.iter().map(|(key, value)| (key.as_ref(), value))
    }

    pub fn into_map(self) -> Map<String, Value> {
        self.0
            .into_iter()
            .map(|(key, value)| (key.into_owned(), value))
            .collect()
    }
}

impl Index<&str> for Fields {
    type Output = Value;

    fn index(&self, key: &str) -> &Value {
        self.get(key).unwrap_or(&NULL)
    }
}

impl IntoIterator for Fields {
    type Item = (Key, Value);
    type IntoIter = std::vec::IntoIter<(Key, Value)>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
