//! The API surface both dialects share (contract section 5).

use crate::error::CrumbError;
use crate::fields::Input;
use crate::framing::{Event, Framer};
use crate::json::{Map, Value};

/// What a text delta on the fast path needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastText {
    /// No event: the run is over (counted as dropped) or the delta is empty.
    Nothing,
    /// One `TEXT_MESSAGE_CONTENT` for the open message (`content_prefix`, the
    /// delta, `}`), or one `TOOL_CALL_ARGS`: decided, not yet recorded. Writing
    /// its frame (`Framer::write_content`, `write_tool_args`) records it;
    /// sent otherwise, `Framer::record_content` or `record_tool_args` does.
    Content,
    /// A valid delta with no message open: `open_text` opens one (two events).
    Open,
    /// Anything else (the first call, a lone surrogate) takes the general path.
    General,
}

/// `Dialect::framer` and `framer_mut` of a dialect that keeps its framer in a `framer` field.
macro_rules! framer_field {
    () => {
        fn framer(&self) -> &Framer {
            &self.framer
        }

        fn framer_mut(&mut self) -> &mut Framer {
            &mut self.framer
        }
    };
}
pub(crate) use framer_field;

pub trait Dialect: Sized {
    type Parsed;

    fn framer(&self) -> &Framer;
    fn framer_mut(&mut self) -> &mut Framer;
    fn parse(&self, input: Input) -> Result<Self::Parsed, CrumbError>;
    fn apply(&mut self, parsed: Self::Parsed);
    fn finish_run(&mut self);
    fn fail_run(&mut self, message: &str, code: &str);

    /// A run stopped by a cancel (contract section 8): a 1.0 client gets the
    /// `cancelled` outcome, a 0.0.x client exactly what `finish()` gives.
    fn cancel_run(&mut self) {
        if self.framer().protocol_v1 {
            self.framer_mut().run_cancelled();
        } else {
            self.finish_run();
        }
    }

    /// The events for one item; a bad item changes nothing.
    fn call(&mut self, input: Input) -> Result<Vec<Event>, CrumbError> {
        if self.framer().finished {
            self.framer_mut().dropped += 1;
            return Ok(Vec::new());
        }
        let parsed = self.parse(input)?;
        self.framer_mut().out.clear();
        self.apply(parsed);
        Ok(self.framer_mut().take_out())
    }

    /// Like `call`, writing the frames to `out` instead of handing the events over.
    fn call_into(&mut self, input: Input, out: &mut Vec<u8>) -> Result<(), CrumbError> {
        if self.framer().finished {
            self.framer_mut().dropped += 1;
            return Ok(());
        }
        let parsed = self.parse(input)?;
        self.framer_mut().out.clear();
        self.apply(parsed);
        self.framer_mut().write_out(out);
        Ok(())
    }

    /// Like `call`, also appending the events' frames to `out`: one mapping, both forms.
    fn call_written(&mut self, input: Input, out: &mut Vec<u8>) -> Result<Vec<Event>, CrumbError> {
        if self.framer().finished {
            self.framer_mut().dropped += 1;
            return Ok(Vec::new());
        }
        let parsed = self.parse(input)?;
        self.framer_mut().out.clear();
        self.apply(parsed);
        Ok(self.framer_mut().take_out_written(out))
    }

    /// Like `call` for an item already checked: `act` applies it to a started run.
    ///
    /// The events are left in the framer's `out`, emptied first.
    fn call_checked(&mut self, act: impl FnOnce(&mut Self)) {
        let framer = self.framer_mut();
        framer.out.clear();
        if framer.finished {
            framer.dropped += 1;
            return;
        }
        if !framer.started {
            framer.start(None, None);
        }
        act(self);
    }

    /// Decides a valid text delta without building events, when it can.
    // Inlined into the encode_many loop.
    #[allow(clippy::inline_always)]
    #[inline(always)]
    fn fast_text(&mut self, delta: &str) -> FastText {
        let framer = self.framer_mut();
        if framer.finished {
            framer.dropped += 1;
            FastText::Nothing
        } else if !framer.started {
            FastText::General
        } else if delta.is_empty() {
            FastText::Nothing
        } else if framer.coalesce_bytes > 0 {
            // Held and merged by the framer's own path.
            FastText::General
        } else if framer.text_id.is_some() {
            FastText::Content
        } else {
            FastText::Open
        }
    }

    /// The events of a delta `fast_text` found to be `Open`, left in the framer's `out`.
    fn open_text(&mut self, delta: &str) {
        let framer = self.framer_mut();
        framer.out.clear();
        framer.text(delta);
    }

    /// Decides a valid content delta for the message the item names (the
    /// events dialect); anything but content for the open message is `General`.
    fn fast_message_text(&mut self, _message_id: &str, _delta: &str) -> FastText {
        FastText::General
    }

    /// Decides a valid streamed tool-argument piece (crumbs) without building events.
    fn fast_tool_args(&mut self, tool_call_id: &str, delta: &str) -> FastText {
        let framer = self.framer_mut();
        if framer.finished {
            framer.dropped += 1;
            FastText::Nothing
        } else if !framer.started || framer.closes_text_always() || framer.coalesce_bytes > 0 {
            FastText::General
        } else if !framer.is_open_tool(tool_call_id) {
            framer.dropped += 1;
            FastText::Nothing
        } else if delta.is_empty() {
            FastText::Nothing
        } else {
            FastText::Content
        }
    }

    /// The interrupts this run leaves pending, for `snapshot()`.
    fn pending_interrupts(&self) -> Vec<Value> {
        Vec::new()
    }

    /// What a reader joining now, and the store, need of the run: see docs/contract-notes.md.
    fn snapshot(&self) -> Value {
        let framer = self.framer();
        let (messages, open) = framer.run_snapshot();
        let mut out = Map::new();
        out.insert("messages".to_owned(), Value::Array(messages));
        out.insert("open".to_owned(), Value::Array(open));
        out.insert("state".to_owned(), Value::Object(framer.state.clone()));
        // A client told the run was cancelled holds none of its interrupts.
        let interrupts = if framer.told_cancelled {
            Vec::new()
        } else {
            self.pending_interrupts()
        };
        out.insert("interrupts".to_owned(), Value::Array(interrupts));
        out.insert(
            "last_id".to_owned(),
            Value::from(framer.event_ids.next() - 1),
        );
        Value::Object(out)
    }

    fn finish(&mut self) -> Vec<Event> {
        self.terminal(Self::finish_run);
        self.framer_mut().take_out()
    }

    /// `finish()` as numbered frames appended to `out`.
    fn finish_into(&mut self, out: &mut Vec<u8>) {
        self.terminal(Self::finish_run);
        self.framer_mut().write_out(out);
    }

    /// `cancel()`: ends a run stopped by a cancel.
    fn cancel(&mut self) -> Vec<Event> {
        self.terminal(Self::cancel_run);
        self.framer_mut().take_out()
    }

    /// `cancel()` as numbered frames appended to `out`.
    fn cancel_into(&mut self, out: &mut Vec<u8>) {
        self.terminal(Self::cancel_run);
        self.framer_mut().write_out(out);
    }

    /// `cancel()`, also appending the events' frames to `out`.
    fn cancel_written(&mut self, out: &mut Vec<u8>) -> Vec<Event> {
        self.terminal(Self::cancel_run);
        self.framer_mut().take_out_written(out)
    }

    /// `fail(exc)`: `message` is str(exc) made valid Unicode, `code` its class name.
    fn fail(&mut self, message: &str, code: &str) -> Vec<Event> {
        self.terminal(|dialect| dialect.fail_run(message, code));
        self.framer_mut().take_out()
    }

    /// `finish()`, also appending the events' frames to `out`.
    fn finish_written(&mut self, out: &mut Vec<u8>) -> Vec<Event> {
        self.terminal(Self::finish_run);
        self.framer_mut().take_out_written(out)
    }

    /// `fail(exc)`, also appending the events' frames to `out`.
    fn fail_written(&mut self, message: &str, code: &str, out: &mut Vec<u8>) -> Vec<Event> {
        self.terminal(|dialect| dialect.fail_run(message, code));
        self.framer_mut().take_out_written(out)
    }

    /// `fail(exc)` as numbered frames appended to `out`.
    fn fail_into(&mut self, message: &str, code: &str, out: &mut Vec<u8>) {
        self.terminal(|dialect| dialect.fail_run(message, code));
        self.framer_mut().write_out(out);
    }

    /// Emits the delta held back by coalescing, if any, leaving it in the framer's `out`.
    fn flush(&mut self) {
        let framer = self.framer_mut();
        framer.out.clear();
        framer.flush_held();
    }

    /// Ends the run, leaving its last events in the framer's `out`.
    fn terminal(&mut self, act: impl FnOnce(&mut Self)) {
        let framer = self.framer_mut();
        framer.out.clear();
        if framer.finished {
            return;
        }
        if !framer.started {
            framer.start(None, None);
        }
        act(self);
    }
}
