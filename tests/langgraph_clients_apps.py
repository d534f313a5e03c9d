"""The app the LangGraph-client suites serve (``tests.langgraph_clients_apps:app``).

Agents: ``demo`` (the demo agent, AGUI_DEMO_DELAY=0: text, a calculator tool
call, an approval interrupt), ``graph`` (``langgraph_agent`` over the adapter
tests' compiled graph: its own graph and schemas), ``subagents`` (text, then a
subagent that says something, then text again) and ``signals`` (a CUSTOM event
and a state snapshot), on a memory store.
"""

from __future__ import annotations

from agui_bridge import crumbs as c
from agui_bridge.adapters.langgraph import langgraph_agent
from agui_bridge.app import App
from agui_bridge.demo import demo

from tests.adapter_langgraph import langgraph_graph

app = App(store="memory://")
app.agent("demo")(demo)
app.agent("graph")(langgraph_agent(langgraph_graph()))


@app.agent("subagents")
async def subagents(ctx):
    yield c.text_delta("asking the researcher. ")
    yield c.subagent_start("researcher", "subagents")
    yield c.text_delta("found it.")
    yield c.subagent_end("researcher", "subagents", output={"found": True})
    yield c.text_delta("done.")


@app.agent("signals", dialect="events")
async def signals(ctx):
    yield {"type": "CUSTOM", "name": "progress", "value": {"done": 1, "of": 2}}
    yield {"type": "STATE_SNAPSHOT", "snapshot": {**ctx.state, "phase": "half"}}
    reply = ctx.new_id("reply")
    yield {"type": "TEXT_MESSAGE_START", "messageId": reply, "role": "assistant"}
    yield {"type": "TEXT_MESSAGE_CONTENT", "messageId": reply, "delta": "ok"}
    yield {"type": "TEXT_MESSAGE_END", "messageId": reply}
