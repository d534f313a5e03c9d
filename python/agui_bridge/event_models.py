"""AG-UI event models (``ag_ui.core``) as the dicts the events dialect reads.

Both builds call this for an item that is not a dict, so the one rule for
models lives here: a model is read as the SDK's own encoder writes it
(camelCase keys, optional fields without a value left out), minus
``rawEvent``, which the bridge never sends and which may hold objects that
are not JSON. A RAW event is not dumped at all: the dialect ignores it.
"""

from __future__ import annotations


def event_dict(item):
    """The dict of an event model; anything else is returned as it is."""
    dump = getattr(type(item), "model_dump", None)
    if dump is None:
        return item
    if getattr(item, "type", None) == "RAW":
        return {"type": "RAW"}
    return dump(item, mode="json", by_alias=True, exclude={"raw_event"})
