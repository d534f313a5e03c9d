"""The ``events`` stream mode: a run's AG-UI events as LangChain ``astream_events``
v2 events, in the shapes ``@ag-ui/langgraph`` (what CopilotKit's runtime runs
for a LangGraph deployment) reads them.

Each part is ``{event, name, run_id, tags, metadata, data, parent_ids}``:

- RUN_STARTED: ``on_chain_start`` of the graph, then of its node (the agent);
- TEXT_MESSAGE_CONTENT: ``on_chat_model_stream`` ``{chunk: AIMessageChunk}``
  (a message's first after ``on_chat_model_start``); TEXT_MESSAGE_END:
  ``on_chat_model_end`` ``{output: AIMessage}``;
- TOOL_CALL_START / ARGS: ``on_chat_model_stream`` with ``tool_call_chunks``
  (the name first, then the arguments); TOOL_CALL_END: ``on_chat_model_end``;
- TOOL_CALL_RESULT: ``on_tool_start`` ``{input}``, ``on_tool_end``
  ``{input, output: ToolMessage}``;
- REASONING_MESSAGE_CONTENT: ``on_chat_model_stream`` with a ``reasoning``
  content block (its ``summary`` and the message's ``id``); REASONING_END: an
  empty one (what ends reasoning for the client);
- CUSTOM: ``on_custom_event`` (``name``, ``data``: its value);
- RUN_FINISHED: ``on_chain_end`` of the node (``output``: the run's values),
  then of the graph.

A chat model stream holds one thing at a time (a text or a tool call): the
client reads a tool call chunk while a text is open as that text's end, and
text while a call is open as the call's end. So before one opens, the other
is ended (``on_chat_model_end``); a text resumed later opens again, and the
arguments of a call ended that way are left to the thread's messages (the
client reads them when the run ends). Ids are derived from the run's, so a
stream read again (a join, a resume by id) is the same bytes.
"""

from __future__ import annotations

import uuid

import orjson

from .messages import to_langgraph

GRAPH = "LangGraph"


def _chunk(message_id, content="", **more) -> dict:
    """An AIMessageChunk as LangChain serialises one."""
    chunk = {
        "content": content,
        "additional_kwargs": {},
        "response_metadata": {},
        "type": "AIMessageChunk",
        "name": None,
        "id": message_id,
        "example": False,
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": None,
        "tool_call_chunks": [],
    }
    chunk.update(more)
    return chunk


class LcEvents:
    """One reader's ``events`` parts of a run (made in order from its AG-UI events)."""

    def __init__(self, node: str, run_id: str, meta: dict):
        self.node = node
        self.run_id = run_id
        self.ids: dict[str, str] = {}
        self.meta = meta  # the projector's (langgraph_node, step, thread and run ids)
        self.graph_run = self._id("graph")
        self.node_run = self._id("node")
        self.open: tuple[str, str] | None = None  # what the client's stream holds
        self.started: set[str] = set()  # messages whose model run began
        self.names: dict[str, str] = {}  # tool call id -> tool name
        self.args: dict[str, str] = {}  # tool call id -> its arguments so far
        self.owners: dict[str, str | None] = {}  # tool call id -> its message's id

    def _id(self, what: str) -> str:
        made = self.ids.get(what)
        if made is None:  # once per thing: a chat model's id is asked for at every token
            made = self.ids[what] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.run_id}:{what}"))
        return made

    def _event(self, event, name, run_id, data, parents) -> dict:
        return {
            "event": event,
            "name": name,
            "run_id": run_id,
            "tags": [],
            "metadata": self.meta,
            "data": data,
            "parent_ids": parents,
        }

    def _model(self, event, message_id, data) -> dict:
        run = self._id(f"model:{message_id}")
        return self._event(event, "agent", run, data, [self.graph_run, self.node_run])

    def _close(self, out: list, made) -> None:
        """Ends what the client's stream holds (a text or a tool call)."""
        if self.open is None:
            return
        kind, key = self.open
        self.open = None
        message_id = key if kind == "text" else self.owners.get(key)
        message = made.message(message_id)
        output = to_langgraph(message) if message is not None else _chunk(message_id)
        out.append(self._model("on_chat_model_end", message_id, {"output": output}))

    def _start_model(self, out: list, message_id) -> None:
        if message_id in self.started:
            return
        self.started.add(message_id)
        data = {"input": {"messages": [[]]}}
        out.append(self._model("on_chat_model_start", message_id, data))

    def feed(self, event: dict, kind, made) -> list[dict]:
        """The events parts of one AG-UI event; ``made`` (the projector) looks up the
        run's messages: ``owner(call id)``, ``message(id)``, ``call(call id)``."""
        out: list[dict] = []
        if kind == "TEXT_MESSAGE_CONTENT":
            message_id = event.get("messageId")
            if self.open != ("text", message_id):
                self._close(out, made)
                self._start_model(out, message_id)
                self.open = ("text", message_id)
            chunk = _chunk(message_id, event.get("delta", ""))
            out.append(self._model("on_chat_model_stream", message_id, {"chunk": chunk}))
        elif kind == "TEXT_MESSAGE_END":
            if self.open == ("text", event.get("messageId")):
                self._close(out, made)
        elif kind == "TOOL_CALL_START":
            call_id = event.get("toolCallId")
            self.names[call_id] = event.get("toolCallName") or ""
            self.args[call_id] = ""
            self._close(out, made)
            message_id = made.owner(call_id) or event.get("parentMessageId")
            self.owners[call_id] = message_id  # its arguments follow: one look-up per call
            self._start_model(out, message_id)
            self.open = ("call", call_id)
            call = {"id": call_id, "name": self.names[call_id], "args": "", "index": 0}
            chunk = _chunk(message_id, tool_call_chunks=[{**call, "type": "tool_call_chunk"}])
            out.append(self._model("on_chat_model_stream", message_id, {"chunk": chunk}))
        elif kind == "TOOL_CALL_ARGS":
            call_id = event.get("toolCallId")
            delta = event.get("delta", "")
            self.args[call_id] = self.args.get(call_id, "") + delta
            if self.open == ("call", call_id) and delta:
                message_id = self.owners.get(call_id)
                call = {"id": call_id, "name": None, "args": delta, "index": 0}
                chunk = _chunk(message_id, tool_call_chunks=[{**call, "type": "tool_call_chunk"}])
                out.append(self._model("on_chat_model_stream", message_id, {"chunk": chunk}))
        elif kind == "TOOL_CALL_END":
            if self.open == ("call", event.get("toolCallId")):
                self._close(out, made)
        elif kind == "TOOL_CALL_RESULT":
            self._close(out, made)
            out.extend(self._tool(event, made))
        elif kind == "REASONING_MESSAGE_CONTENT":
            message_id = event.get("messageId")
            # The summary form: the client takes the reasoning message's id from it
            # (a plain {"reasoning": …} block gets an id of the client's making).
            summary = [{"type": "summary_text", "text": event.get("delta", ""), "index": 0}]
            block = {"type": "reasoning", "summary": summary, "id": message_id, "index": 0}
            chunk = _chunk(message_id, [block])
            out.append(self._model("on_chat_model_stream", message_id, {"chunk": chunk}))
        elif kind == "REASONING_END":
            message_id = event.get("messageId")
            if self.open is None:  # an empty chunk would end an open text too
                chunk = _chunk(message_id)
                out.append(self._model("on_chat_model_stream", message_id, {"chunk": chunk}))
        elif kind == "CUSTOM":
            name = event.get("name")
            run = self._id(f"custom:{name}")
            parents = [self.graph_run, self.node_run]
            out.append(self._event("on_custom_event", name, run, event.get("value"), parents))
        elif kind == "RUN_STARTED":
            out.append(self._event("on_chain_start", GRAPH, self.graph_run, {"input": {}}, []))
            node = self._event("on_chain_start", self.node, self.node_run, {"input": {}}, [])
            node["parent_ids"] = [self.graph_run]
            out.append(node)
        return out

    def end(self, made, update: dict) -> list[dict]:
        """The run ended: what is open ends, then the node (its output: ``update``),
        then the graph."""
        out: list[dict] = []
        self._close(out, made)
        node = self._event("on_chain_end", self.node, self.node_run, {"output": update}, [])
        node["parent_ids"] = [self.graph_run]
        out.append(node)
        out.append(self._event("on_chain_end", GRAPH, self.graph_run, {"output": update}, []))
        return out

    def _tool(self, event: dict, made) -> list[dict]:
        call_id = event.get("toolCallId")
        called = made.call(call_id) or {}
        name = self.names.get(call_id) or called.get("name") or ""
        try:
            args = orjson.loads(self.args.get(call_id) or called.get("arguments") or "{}")
        except orjson.JSONDecodeError:
            args = {}
        content = event.get("content")
        message = {
            "type": "tool",
            "content": content if content is not None else "",
            "tool_call_id": call_id,
            "name": name,
            "id": event.get("messageId"),
            "status": "success",
            "additional_kwargs": {},
            "response_metadata": {},
            "artifact": None,
        }
        run = self._id(f"tool:{call_id}")
        parents = [self.graph_run, self.node_run]
        return [
            self._event("on_tool_start", name, run, {"input": args}, parents),
            self._event("on_tool_end", name, run, {"input": args, "output": message}, parents),
        ]
