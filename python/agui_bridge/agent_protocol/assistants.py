"""An assistant's graph, schemas and subgraphs (``GET /assistants/{id}/graph`` …).

An agent declares them on its function (``app.agent`` keeps it as
``agent.fn``), as ``langgraph_agent`` does for the graph it wraps:

- ``fn.agui_graph``: a LangGraph graph (anything with ``get_graph`` and the
  ``get_*_jsonschema`` methods of a compiled graph); its drawing, schemas
  and subgraphs are served as LangGraph's server serves them;
- ``fn.agui_schemas``: a dict of JSON schemas (``input_schema``,
  ``output_schema``, ``state_schema``, ``config_schema``,
  ``context_schema``) over what the graph gives (or instead of one).

A plain agent is a one-node graph whose node is the agent id, and its
schemas are permissive (any object). A client that filters by a schema's
properties (``@ag-ui/langgraph`` keeps only the input and output keys it
lists) filters nothing then.
"""

from __future__ import annotations

import contextlib
import logging

import orjson

log = logging.getLogger("agui_bridge.ingress")

SCHEMA_KEYS = ("input_schema", "output_schema", "state_schema", "config_schema", "context_schema")
# Any object: what an agent that declares nothing takes and gives.
PERMISSIVE = {"type": "object", "additionalProperties": True}


def graph_of(agent, xray=False) -> dict:
    """The agent as LangGraph's drawable graph: ``{nodes: [{id, type, data}], edges}``."""
    graph = getattr(agent.fn, "agui_graph", None)
    if graph is not None:
        drawn = _json(graph.get_graph(xray=xray).to_json())
        for node in drawn.get("nodes", ()):
            data = node.get("data")
            if isinstance(data, dict):
                data.pop("id", None)  # a class path, as langgraph-api drops it
        return drawn
    node = agent.agent_id
    return {
        "nodes": [
            {"id": "__start__", "type": "runnable", "data": {"name": "__start__"}},
            {"id": node, "type": "runnable", "data": {"name": node}},
            {"id": "__end__"},
        ],
        "edges": [
            {"source": "__start__", "target": node},
            {"source": node, "target": "__end__"},
        ],
    }


def schemas_of(agent) -> dict:
    """``{graph_id, input_schema, output_schema, state_schema, config_schema, context_schema}``."""
    fn = agent.fn
    found = {key: None for key in SCHEMA_KEYS}
    graph = getattr(fn, "agui_graph", None)
    if graph is not None:
        found.update(_graph_schemas(graph))
    declared = getattr(fn, "agui_schemas", None)
    if isinstance(declared, dict):
        found.update({k: v for k, v in declared.items() if k in SCHEMA_KEYS})
    for key in ("input_schema", "output_schema", "state_schema"):
        if found[key] is None:
            found[key] = dict(PERMISSIVE)
    if found["config_schema"] is None:
        found["config_schema"] = dict(PERMISSIVE)
    return {"graph_id": agent.agent_id, **found}


def subgraphs_of(agent, namespace: str | None = None, recurse: bool = False) -> dict:
    """``{namespace: schemas}`` of the graph's subgraphs (none for a plain agent)."""
    graph = getattr(agent.fn, "agui_graph", None)
    if graph is None or not hasattr(graph, "get_subgraphs"):
        return {}
    out = {}
    for ns, subgraph in graph.get_subgraphs(namespace=namespace, recurse=recurse):
        out[ns] = {"graph_id": agent.agent_id, **_graph_schemas(subgraph)}
    return out


def _graph_schemas(graph) -> dict:
    """What a compiled LangGraph graph says of itself; a method it lacks or that
    fails leaves its schema out (logged: a graph's schema is its author's code)."""
    methods = {
        "input_schema": "get_input_jsonschema",
        "output_schema": "get_output_jsonschema",
        "context_schema": "get_context_jsonschema",
    }  # no config schema: LangGraph 1 deprecates it for the context schema
    out: dict = {}
    for key, name in methods.items():
        method = getattr(graph, name, None)
        if method is None:
            continue
        try:
            out[key] = _json(method())
        except Exception as error:  # the graph's own code
            log.info("the graph's %s failed: %s", name, error)
    with contextlib.suppress(Exception):
        out["state_schema"] = _state_schema(graph)
    return out


def _state_schema(graph) -> dict | None:
    """The graph's state: its channels, as langgraph-api builds it (the input and
    output schemas' properties together, the output's order first)."""
    output = graph.get_output_jsonschema()
    input_ = graph.get_input_jsonschema()
    properties = {**input_.get("properties", {}), **output.get("properties", {})}
    if not properties:
        return None
    definitions = {**input_.get("$defs", {}), **output.get("$defs", {})}
    schema = {"title": output.get("title", "State"), "type": "object", "properties": properties}
    if definitions:
        schema["$defs"] = definitions
    return _json(schema)


def _json(value) -> dict:
    """A plain JSON object (a graph's drawing may hold objects JSON has no form for)."""
    return orjson.loads(orjson.dumps(value, default=str))
