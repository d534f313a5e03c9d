"""What an agent can do, as AG-UI 1.0's ``AgentCapabilities``.

Served at ``GET {agent path}/capabilities`` (every path of the agent), behind
the app's ``authenticate`` and the ``read`` grant (``run`` implies it).
CopilotKit's runtime forwards this to the browser in ``/info``; a client uses
it to show or hide what the server cannot do (an attachment button, a
reasoning panel, resume after a cut).

Every flag says what the gateway does for every agent, whatever its dialect,
read from how the App is configured: streams are SSE; a cut stream resumes by
event id (``GET /threads/{id}/runs/{run}/events``, kept ``run_retention``
seconds); state snapshots and RFC 6902 deltas go out, and the thread's state
and messages persist in the store; interrupts pause a run until a resume
answers them; reasoning streams (contract section 8), with provider
signatures as encrypted values; tools come from the client
(``RunAgentInput.tools``). Multimodal input is what the App's part policy
lets in (``agui_bridge.parts``: each kind whose MIME types ``mime_types``
admits; ``file``: provider handles); an agent whose model takes no images
says so in its own. An agent adds its own with
``@app.agent(..., capabilities={...})``, merged over these key by key
(nested objects merged, anything else replaced).
"""

from __future__ import annotations

from typing import Any


def _merge(base: dict, extra: dict) -> dict:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def check(capabilities: Any) -> dict:
    """An agent's own capabilities: a JSON object (ValueError otherwise)."""
    if capabilities is None:
        return {}
    if not isinstance(capabilities, dict) or not all(isinstance(k, str) for k in capabilities):
        raise ValueError("capabilities is a dict of AgentCapabilities fields")
    return capabilities


def of(app, agent) -> dict:
    """``agent``'s AgentCapabilities on ``app``."""
    served = {
        "identity": {"name": agent.agent_id, "type": "agui-bridge"},
        "transport": {"streaming": True, "resumable": app.limits.run_retention > 0},
        "tools": {"supported": True, "clientProvided": True},
        "state": {"snapshots": True, "deltas": True, "memory": True, "persistentState": True},
        "reasoning": {"supported": True, "streaming": True, "encrypted": True},
        "multimodal": {
            "input": {
                "image": app.parts.mime_allowed("image/png"),
                "audio": app.parts.mime_allowed("audio/wav"),
                "video": app.parts.mime_allowed("video/mp4"),
                "pdf": app.parts.mime_allowed("application/pdf"),
                "file": True,
            },
        },
        "humanInTheLoop": {"supported": True, "interrupts": True, "approvals": True},
    }
    return _merge(served, agent.capabilities or {})
