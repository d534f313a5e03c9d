"""What a caller may do, written once for both protocols: the action grant and
the cross-site rule.

Actions: ``read`` (look at threads, runs and streams; ``run`` implies it) and
``run`` (start, cancel or change anything). An identity with no ``actions``
(a dict key or an attribute) may do everything; ``"*"`` grants every action.

A browser sends ``Origin`` with every cross-origin request, and with a cookie
for credentials a page on any site could otherwise make a user's browser
change state here (a ``<form>`` POST needs no preflight). A request that
changes state (any method but GET, HEAD and OPTIONS) from an ``Origin``
that is neither this gateway's own nor one the CORS policy allows
(``App(cors=...)``, ``ops.cors.cross_site_allowed``) is refused before
anything else is judged. A caller that sends no ``Origin`` (an SDK, curl, a
server) is not a browser page: not cross-site.
"""

from __future__ import annotations

from ..errors import HttpError
from ..ops.cors import cross_site_allowed

SAFE_METHODS = frozenset(("GET", "HEAD", "OPTIONS"))


def granted(identity, action: str) -> bool:
    actions = None
    if isinstance(identity, dict):
        actions = identity.get("actions")
    elif identity is not None:
        actions = getattr(identity, "actions", None)
    if actions is None:
        return True
    return action in actions or "*" in actions


def require(identity, action: str) -> None:
    """403 unless ``identity`` may do ``action`` (``read`` is also granted by ``run``)."""
    if granted(identity, action) or (action == "read" and granted(identity, "run")):
        return
    raise HttpError(403, "forbidden", f"the {action!r} action is not granted")


def refuse_cross_site(app, conn, changes_state: bool | None = None) -> None:
    """403 for a state-changing request from a page on another site
    (``changes_state``: by its method unless said, as for a GET that may stop a run)."""
    if changes_state is None:
        changes_state = conn.method not in SAFE_METHODS
    if not changes_state or cross_site_allowed(app, conn.headers):
        return
    raise HttpError(
        403,
        "cross_site",
        "a request from another site may not change state here: its Origin is neither"
        " this gateway's nor one the CORS policy allows",
    )
