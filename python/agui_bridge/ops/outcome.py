"""How a run ended, in the few words metrics, logs and traces use."""

from __future__ import annotations

# finished: RUN_FINISHED; interrupted: RUN_FINISHED waiting on a human;
# cancelled: stopped (POST …/cancel) or its client left (on_disconnect="cancel");
# error: RUN_ERROR, with its code; lost: its lease was taken over (nothing written).
OUTCOMES = ("finished", "interrupted", "cancelled", "error", "lost")


def outcome_of(run) -> tuple[str, str]:
    """(outcome, error code or "") of a run whose task is done."""
    if run.lost:
        return "lost", "lease_lost"
    terminal = getattr(run, "terminal", None) or {}
    kind = terminal.get("type")
    if run.cancelled:
        return "cancelled", "client_left"
    if kind == "RUN_ERROR" or (kind is None and run.errored):
        return "error", str(terminal.get("code") or "error")[:64]
    if run.stopping:
        return "cancelled", ""
    if kind is None:
        return "error", "aborted"  # the task was cancelled from outside
    outcome = terminal.get("outcome")
    if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
        return "interrupted", ""
    return "finished", ""
