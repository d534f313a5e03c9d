"""Who a thread belongs to: the identity that created it, stored with it.

The rule, the one place it is written: ``authenticate`` may return an
identity with an owner. A dict's ``"owner"`` key, else its ``"id"`` key; an
object's ``owner`` attribute, else its ``id`` attribute. A string is the
owner (an int is written in decimal); anything else, or no identity (no
``authenticate``), is no owner.

A thread is stored with the owner of the caller that created it (an Agent
Protocol ``POST /threads``, or the first run on a new thread); it never
changes after. A caller with an owner lists (``POST /threads/search``, the
playground's list) only the threads stored with its owner; a caller without
one lists every thread. Listing is not access: a thread's routes are guarded
by ``authorize_thread`` as before, and every listed thread passes it too.
"""

from __future__ import annotations

from ..shapes import storable_id


def owner_of(identity) -> str | None:
    if identity is None:
        return None
    if isinstance(identity, dict):
        value = identity.get("owner", identity.get("id"))
    else:
        value = getattr(identity, "owner", None)
        if value is None:
            value = getattr(identity, "id", None)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    return value if isinstance(value, str) and storable_id(value) else None
