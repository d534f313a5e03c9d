"""Run an agent you already have behind agui-bridge, through the public agent API.

Each adapter builds an agent function (``fn(ctx) -> crumbs``) to register
with ``app.agent("id")(...)``; threads, auth, human-in-the-loop and resume
come from the ``App``. Each needs its framework, an optional extra:

- ``agui_bridge.adapters.openai``: any OpenAI-compatible chat completions
  server (``pip install agui-bridge[openai]``);
- ``agui_bridge.adapters.pydantic_ai``: a pydantic-ai ``Agent``
  (``agui-bridge[pydantic-ai]``);
- ``agui_bridge.adapters.langgraph``: a compiled LangGraph graph
  (``agui-bridge[langgraph]``).

The modules are not imported here, so a missing framework only matters to
the adapter that needs it.
"""
