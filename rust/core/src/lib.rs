//! The AG-UI framing core of agui-bridge, with no Python in it.
//!
//! Both input dialects (crumbs, chunks) drive one [`framing::Framer`]; the
//! [`sse`] module writes its events as frames byte for byte like orjson.

pub mod appended;
pub mod chunks;
pub mod crumbs;
pub mod error;
pub mod event;
pub mod events;
pub mod fields;
pub mod framing;
pub mod json;
pub mod messages;
pub mod patch;
pub mod reasoning;
pub mod sse;
pub mod stream;
pub mod subagents;
pub mod table;
pub mod usage;

pub use error::CrumbError;
