"""The run's token usage (contract section 8): what the agent reported, summed
per provider and model, as AG-UI 1.0 ``TokenUsage[]``.

A report is read by name (docs/contract-notes.md): the ``TokenUsage`` names
first, then the usual provider spellings; a count is an integer from 0 to
2**53 - 1 (what survives a JSON round trip), anything else is not a count.
"""

from __future__ import annotations

import re

# The version RUN_STARTED.protocolVersion names: the one this server speaks.
PROTOCOL_VERSION = "1.0"
MAX_COUNT = 2**53 - 1

# Each TokenUsage count, and where it may be found in a report (first match wins).
_COUNTS = (
    ("inputTokens", (("inputTokens",), ("input_tokens",), ("prompt_tokens",), ("promptTokens",))),
    (
        "outputTokens",
        (("outputTokens",), ("output_tokens",), ("completion_tokens",), ("completionTokens",)),
    ),
    ("totalTokens", (("totalTokens",), ("total_tokens",))),
    (
        "reasoningTokens",
        (
            ("reasoningTokens",),
            ("reasoning_tokens",),
            ("completion_tokens_details", "reasoning_tokens"),
            ("output_tokens_details", "reasoning_tokens"),
        ),
    ),
    (
        "cachedInputTokens",
        (
            ("cachedInputTokens",),
            ("prompt_tokens_details", "cached_tokens"),
            ("input_tokens_details", "cached_tokens"),
            ("cache_read_input_tokens",),
        ),
    ),
    ("cacheWriteInputTokens", (("cacheWriteInputTokens",), ("cache_creation_input_tokens",))),
)

_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*")


def speaks_v1(declared) -> bool:
    """Whether a client's declared ``protocolVersion`` is 1.0 or later: dot-separated
    digits with a major of at least 1. Anything else gets the 0.0.x stream."""
    if not isinstance(declared, str) or not _VERSION.fullmatch(declared):
        return False
    return declared.split(".")[0].lstrip("0") != ""


def _count_at(report: dict, path: tuple):
    value = report
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    return None


def _label(report: dict, key: str):
    value = report.get(key)
    return value if isinstance(value, str) else None


class Usage:
    __slots__ = ("entries",)

    def __init__(self):
        # (provider, model) -> {count name: total}, in order of first report.
        self.entries: dict[tuple, dict] = {}

    def add(self, report, model=None) -> None:
        """Adds one report; ``model`` (a crumb's own ``model``) wins over the report's."""
        if not isinstance(report, dict):
            return
        counts = {}
        for name, paths in _COUNTS:
            for path in paths:
                found = _count_at(report, path)
                if found is not None:
                    counts[name] = found
                    break
        if not counts:
            return
        if not isinstance(model, str):
            model = _label(report, "model")
        totals = self.entries.setdefault((_label(report, "provider"), model), {})
        for name, count in counts.items():
            totals[name] = min(totals.get(name, 0) + count, MAX_COUNT)

    def add_all(self, reports) -> None:
        """Adds the entries of a ``TokenUsage[]`` (an events-dialect terminal event's)."""
        if isinstance(reports, list):
            for report in reports:
                self.add(report)

    def value(self) -> list | None:
        """``TokenUsage[]``, or ``None`` when nothing was reported."""
        if not self.entries:
            return None
        out = []
        for (provider, model), totals in self.entries.items():
            entry = {}
            if provider is not None:
                entry["provider"] = provider
            if model is not None:
                entry["model"] = model
            for name, _ in _COUNTS:
                if name in totals:
                    entry[name] = totals[name]
            out.append(entry)
        return out
