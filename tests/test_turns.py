"""Turn merging (``agui_bridge.turns``) as plain functions: no HTTP, no store."""

from __future__ import annotations

from dataclasses import replace

import pytest
from agui_bridge.errors import HttpError
from agui_bridge.run_input import Resume, RunInput
from agui_bridge.store import Thread
from agui_bridge.store.branches import Cut
from agui_bridge.turns import carried, merge, resumption, state_update


def user(i: str, text: str | None = None) -> dict:
    return {"id": i, "role": "user", "content": text if text is not None else i}


def request(messages, run_id: str = "r", state=None, resume=None) -> RunInput:
    return RunInput(
        thread_id="t",
        run_id=run_id,
        input="",
        history=[],
        messages=messages,
        state=state,
        resume=resume,
    )


def stored(messages, state=None, interrupts=None) -> Thread:
    return Thread("t", messages=messages, state=state or {}, interrupts=interrupts or [])


def test_a_new_thread_stores_the_users_turn():
    turn = merge(None, request([user("u1")]))
    assert turn.new == [user("u1")] and turn.new_user == user("u1")
    assert turn.history == [] and turn.base == [user("u1")]
    assert "u1" in turn.held and turn.state == {}


def test_a_resent_history_is_not_stored_twice_and_the_stored_copy_wins():
    thread = stored([user("u1"), {"id": "a1", "role": "assistant", "content": "yes"}])
    sent = [user("u1"), {"id": "a1", "role": "assistant", "content": "edited"}, user("u2")]
    turn = merge(thread, request(sent))
    assert turn.new == [user("u2")]
    assert turn.history == thread.messages
    assert turn.base == [*thread.messages, user("u2")]


def test_the_newest_user_message_under_a_held_id_must_be_the_same():
    thread = stored([user("u1", "hello"), assistant("a1")])
    merge(thread, request([user("u1", "hello"), assistant("a1")]))  # a retry: nothing new
    with pytest.raises(HttpError) as refused:
        merge(thread, request([user("u1", "something else"), assistant("a1")]))
    assert (refused.value.status, refused.value.code) == (409, "message_id_conflict")


def test_an_unanswered_message_edited_under_its_id_is_an_edit():
    """The run failed or stopped before any output: the thread ends with the user
    message, and the client resends it edited, under its id (it was 409)."""
    thread = stored([user("u1"), assistant("a1"), user("u2", "hello")])
    edited = user("u2", "hello!")
    turn = merge(thread, request([user("u1"), assistant("a1"), edited], run_id="r3"))
    assert turn.cut is not None and turn.cut.after == "a1"
    assert turn.new == [edited] and turn.new_user == edited
    assert turn.history == [user("u1"), assistant("a1")]
    only = merge(stored([user("u1", "hello")]), request([user("u1", "hello!")]))
    assert only.cut.after is None and only.new == [user("u1", "hello!")]


def test_cancelling_the_pending_interrupts_to_edit_or_regenerate_branches():
    """A client must answer pending interrupts to send anything; to edit or
    regenerate instead it cancels them (AG-UI 1.0 entries). That is a new turn:
    it branches as without interrupts (it appended, and a regenerate got an
    empty input)."""
    interrupt = {"id": "i1", "reason": "approval"}
    thread = stored(CONVERSATION, interrupts=[interrupt])
    cancel = Resume(entries=({"interruptId": "i1", "status": "cancelled"},))
    edit = request([*CONVERSATION[:2], user("u9")], run_id="r3", resume=cancel)
    turn = merge(thread, edit)
    assert turn.cut is not None and turn.cut.after == "a1" and turn.new_user == user("u9")
    again = merge(thread, request(CONVERSATION[:3], run_id="r4", resume=cancel))
    assert again.cut.after == "u2" and again.new_user == user("u2")
    # An answer goes on with the interrupted branch.
    approve = Resume(entries=({"interruptId": "i1", "status": "resolved", "payload": "yes"},))
    assert merge(thread, request(CONVERSATION[:3], resume=approve)).cut is None


def test_regenerating_the_answer_to_tool_results_gives_them_again():
    """A frontend tool's result, its answer, then a regenerate: the client resends
    up to the result; the run gets it as its tool result again (it got none and
    the agent called the tool again)."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asked = {"id": "a1", "role": "assistant", "content": "", "toolCalls": [call]}
    result = {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "42"}
    thread = stored([user("u1"), asked, result, assistant("a2")])
    turn = merge(thread, request([user("u1"), asked, result], run_id="r3"))
    assert turn.cut.after == "t1" and turn.tool_results == [result]
    assert turn.history == [user("u1"), asked] and turn.new == []


def test_an_id_less_user_message_gets_an_id_the_thread_does_not_hold():
    thread = stored([user("r:u1")])
    turn = merge(thread, request([{"role": "user", "content": "hi"}], run_id="r"))
    assert turn.new_user["id"] == "r:u2"
    # an id-less older message cannot be deduplicated: dropped
    two = [{"role": "user", "content": "old"}, {"role": "user", "content": "new"}]
    assert [m["content"] for m in merge(None, request(two)).new] == ["new"]


def test_tool_results_for_known_calls_only_and_only_after_the_last_other_message():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    thread = stored([user("u1"), {"id": "a1", "role": "assistant", "toolCalls": [call]}])
    result = {"id": "x1", "role": "tool", "toolCallId": "c1", "content": "42"}
    unknown = {"id": "x2", "role": "tool", "toolCallId": "nope", "content": "?"}
    turn = merge(thread, request([user("u1"), result]))
    assert turn.tool_results == [result] and turn.new == [result]
    assert turn.history == thread.messages  # a result is not history before the run
    # a result for this turn that answers no call of the thread, or has no id, is refused
    with pytest.raises(HttpError) as refused:
        merge(thread, request([user("u1"), result, unknown]))
    assert refused.value.status == 400 and refused.value.code == "unknown_tool_call"
    assert "'nope'" in refused.value.message and "messages[2] (tool)" in refused.value.message
    id_less = {"role": "tool", "toolCallId": "c1", "content": "42"}
    with pytest.raises(HttpError) as refused:
        merge(thread, request([user("u1"), id_less]))
    assert refused.value.status == 400 and "messages[1] (tool) has no id" in refused.value.message
    # older history answering no call is left out: it could not be placed
    older = merge(thread, request([unknown, user("u2")]))
    assert older.history == thread.messages and older.new_user["id"] == "u2"
    # a result followed by another message is history, not this turn's result
    later = merge(thread, request([result, user("u2")]))
    assert later.tool_results == [] and later.history == [*thread.messages, result]


def test_the_requests_state_goes_on_top_of_the_threads():
    thread = stored([], state={"a": 1, "b": 2})
    assert merge(thread, request([], state={"b": 3})).state == {"a": 1, "b": 3}
    assert thread.state == {"a": 1, "b": 2}  # the loaded thread is not changed


def test_resume_checks():
    pending = [{"id": "i1", "reason": "approve"}, {"id": "i2", "reason": "approve"}]
    with pytest.raises(HttpError) as refused:
        resumption(Resume(decision=True), [])
    assert refused.value.code == "no_pending_interrupt"
    with pytest.raises(HttpError) as refused:
        resumption(Resume(decision=True, interrupt_id="nope"), pending)
    assert refused.value.code == "unknown_interrupt"
    partial = ({"interruptId": "i1", "status": "resolved", "payload": 1},)
    with pytest.raises(HttpError) as refused:
        resumption(Resume(entries=partial), pending)
    assert refused.value.code == "incomplete_resume"
    both = (*partial, {"interruptId": "i2", "status": "resolved", "payload": 2})
    resumed = resumption(Resume(entries=both), pending)
    assert resumed.decision == 1 and resumed.interrupt_id == "i1" and len(resumed.entries) == 2
    whole = resumption(Resume(decision="yes"), pending)
    assert whole.decision == "yes" and whole.interrupts == tuple(pending)
    assert merge(stored([], interrupts=pending), request([], resume=Resume(decision=1))).resume


def test_carried_tells_a_retry_from_new_input():
    assert carried([user("u1")]) == carried([user("u1")])
    # The turn (the newest user message) counts by its content too: an edit is
    # new input; an earlier message is its id (the stored copy wins).
    assert carried([user("u1")]) != carried([user("u1", "other text")])
    later = [user("u1", "other text"), {"id": "a1", "role": "assistant"}, user("u2")]
    assert carried(later) == carried([user("u1"), {"id": "a1", "role": "assistant"}, user("u2")])
    # Another turn is not part of a run that carried u1 only as history.
    assert not carried([user("u1")]) <= carried(later)
    a, b = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    assert carried([a]) != carried([b])
    assert carried([{"id": "x", "role": "activity"}]) == frozenset()


def test_a_state_update_adds_only_messages_the_thread_does_not_hold():
    thread = stored([user("u1")], state={"a": 1})
    added, state, cut = state_update(thread, [user("u1"), user("u2")], {"b": 2})
    assert added == [user("u2")] and state == {"a": 1, "b": 2} and cut is None


def test_a_state_update_replaces_a_held_message_or_forks_at_a_step_by_a_cut():
    thread = stored([user("u1"), user("u2"), user("u3")], state={"a": 1})
    added, _, cut = state_update(thread, [user("u2", "edited"), user("u4")], {})
    assert added == [user("u2", "edited"), user("u3"), user("u4")]
    assert cut == Cut("u1")
    added, state, cut = state_update(thread, [user("u4")], {"b": 2}, step=1)
    assert added == [user("u4")] and state == {"a": 1, "b": 2} and cut == Cut("u1")
    assert state_update(thread, [user("u9")], {}, step=0)[2] == Cut(None)


# -- branches (issue 20) -------------------------------------------------------


def assistant(i: str, text: str | None = None) -> dict:
    return {"id": i, "role": "assistant", "content": text if text is not None else i}


CONVERSATION = [user("u1"), assistant("a1"), user("u2"), assistant("a2")]


def test_a_regenerate_branches_after_the_resent_user_message_and_runs_on_it():
    """Regenerate: the client resends the history up to u2 under a new runId.
    Before branches the agent got an empty input and its answer came after a2."""
    turn = merge(stored(CONVERSATION), request(CONVERSATION[:3], run_id="r2"))
    assert turn.cut is not None and (turn.cut.after, turn.cut.run_id) == ("u2", "r2")
    assert turn.new == [] and turn.new_user == user("u2")
    assert turn.history == CONVERSATION[:2]
    assert turn.base == CONVERSATION[:3]  # what a joining reader sees before the answer


def test_an_edit_as_a_new_message_branches_where_the_client_cut_the_history():
    turn = merge(stored(CONVERSATION), request([user("u9")], run_id="r3"))
    assert turn.cut is None  # nothing held sent: it appends, as before
    turn = merge(stored(CONVERSATION), request([user("u1"), assistant("a1"), user("u9")]))
    assert turn.cut.after == "a1" and turn.new == [user("u9")] and turn.new_user == user("u9")
    assert turn.history == CONVERSATION[:2] and turn.base == [*CONVERSATION[:2], user("u9")]


def test_an_app_whose_clients_resend_starts_a_conversation_over_on_none_of_it():
    """assistant-ui edits the first message by sending it alone, under a new id
    (the issue's stored [u1, a1, a2, u9, a4] against shown [u9, a4]). Nothing
    in the request tells it from a fresh tab that sends only its new message,
    so only an App that says its clients resend (``clients_resend``) branches."""
    edit = replace(request([user("u9")], run_id="r4"), conversation=True)
    turn = merge(stored(CONVERSATION), edit, clients_resend=True)
    assert turn.cut is not None and (turn.cut.after, turn.cut.run_id) == (None, "r4")
    assert turn.history == [] and turn.new == [user("u9")] and turn.base == [user("u9")]
    assert turn.new_user == user("u9")
    # A system message under a fresh id first is still none of the thread's.
    system = {"id": "s1", "role": "system", "content": "be brief"}
    with_system = replace(edit, messages=[system, user("u9")])
    assert merge(stored(CONVERSATION), with_system, clients_resend=True).cut.after is None
    # By default it appends (the history stays on the server); so does the
    # Agent Protocol's new input, and a client that resends anything held.
    assert merge(stored(CONVERSATION), edit).cut is None
    assert merge(stored(CONVERSATION), request([user("u9")]), clients_resend=True).cut is None
    resent = replace(edit, messages=[*CONVERSATION, user("u9")])
    assert merge(stored(CONVERSATION), resent, clients_resend=True).cut is None
    assert merge(None, edit, clients_resend=True).cut is None  # a new thread


def test_an_edit_under_the_same_id_branches_when_the_client_cut_what_followed():
    edited = user("u2", "better question")
    turn = merge(stored(CONVERSATION), request([*CONVERSATION[:2], edited]))
    assert turn.cut.after == "a1" and turn.new == [edited] and turn.new_user == edited
    assert {"u2", "a2"} <= set(turn.held)  # a run's own ids skip the old branch's too
    first = merge(stored(CONVERSATION), request([user("u1", "other first")]))
    assert (
        first.cut.after is None
        and first.history == []
        and first.base == [user("u1", "other first")]
    )
    # Other content inside an unchanged sequence: the stored copy wins ...
    inside = merge(stored(CONVERSATION), request([user("u1", "x"), *CONVERSATION[1:], user("u3")]))
    assert inside.cut is None and inside.new == [user("u3")]
    # ... and the newest user message under its id with what followed it still sent: 409.
    with pytest.raises(HttpError) as refused:
        merge(stored(CONVERSATION), request([*CONVERSATION[:2], edited, assistant("a2")]))
    assert refused.value.code == "message_id_conflict"


def test_a_client_that_sends_the_whole_branch_appends():
    turn = merge(stored(CONVERSATION), request([*CONVERSATION, user("u3")]))
    assert turn.cut is None and turn.new == [user("u3")]
    # reasoning messages a client does not resend (in the middle or at the end) cut nothing
    thinking = {"id": "r1", "role": "reasoning", "content": "hmm"}
    thread = stored([user("u1"), thinking, assistant("a1"), {**thinking, "id": "r9"}])
    turn = merge(thread, request([user("u1"), assistant("a1"), user("u2")]))
    assert turn.cut is None and turn.new == [user("u2")]


def test_a_resume_and_tool_results_go_on_with_the_branch():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asked = {"id": "a1", "role": "assistant", "toolCalls": [call]}
    result = {"id": "x1", "role": "tool", "toolCallId": "c1", "content": "42"}
    turn = merge(stored([user("u1"), asked]), request([user("u1"), asked, result]))
    assert turn.cut is None and turn.tool_results == [result]
    pending = [{"id": "i1", "reason": "approve"}]
    thread = stored([user("u1"), assistant("a1")], interrupts=pending)
    resumed = merge(thread, request([user("u1")], resume=Resume(decision=True)))
    assert resumed.cut is None and resumed.resume is not None and resumed.new_user is None


def test_a_diverging_client_leaves_the_old_tail_as_a_branch_and_brings_its_own():
    """A client on another branch (it shows a1' where the thread holds a1 ... a2)."""
    other = [user("u1"), assistant("b1"), user("v2")]
    turn = merge(stored(CONVERSATION), request(other))
    assert turn.cut.after == "u1" and turn.new == other[1:] and turn.new_user == user("v2")
    assert turn.history == [user("u1"), assistant("b1")]


def test_a_stopped_answer_resent_as_a_prefix_cuts_the_stored_one_to_it():
    full = assistant("a1", "The answer is long and complete.")
    shown = assistant("a1", "The answer is")
    turn = merge(stored([user("u1"), full]), request([user("u1"), shown, user("u2")]))
    assert turn.cut.after == "u1" and turn.new == [shown, user("u2")]
    assert turn.history == [user("u1"), shown] and turn.base == [user("u1"), shown, user("u2")]
    # the same text up to trailing whitespace, or no text at all, is no stop
    for same in (assistant("a1", "The answer is long and complete."), assistant("a1", "")):
        turn = merge(stored([user("u1"), full]), request([user("u1"), same, user("u2")]))
        assert turn.cut is None and turn.new == [user("u2")]
    spaced = stored([user("u1"), assistant("a1", "done\n")])
    turn = merge(spaced, request([user("u1"), assistant("a1", "done"), user("u2")]))
    assert turn.cut is None


def calling(i: str, text: str, *calls: tuple[str, str]) -> dict:
    """An assistant message with tool calls ``(id, arguments)``."""
    message = assistant(i, text)
    message["toolCalls"] = [
        {"id": c, "type": "function", "function": {"name": "look", "arguments": a}}
        for c, a in calls
    ]
    return message


def test_a_stopped_answer_whose_tool_calls_the_page_did_not_all_show_is_cut_to_them():
    """Stop, then type, while the answer's tool call streamed: the page shows the
    text without the call, or the call with part of its arguments. What the page
    shows is stored (the next model turn must not see a call it never showed)."""
    full = calling("a1", "I will look that up.", ("c1", '{"q":"cats"}'), ("c2", "{}"))
    shown_cases = [
        assistant("a1", "I will look that up."),  # no call yet
        calling("a1", "I will look that up.", ("c1", '{"q":"ca')),  # arguments cut
        calling("a1", "I will look that up.", ("c1", '{"q":"cats"}')),  # one of two calls
        calling("a1", "I will", ("c1", "")),  # text cut (the calls follow it)
    ]
    for shown in shown_cases:
        turn = merge(stored([user("u1"), full]), request([user("u1"), shown, user("u2")]))
        assert turn.cut is not None and turn.cut.after == "u1", shown
        assert turn.new == [shown, user("u2")]
    # all of it shown (the calls resent whole), or calls the stored answer does not
    # have: no stop, the stored copy wins
    for same in (
        calling("a1", "I will look that up.", ("c1", '{"q":"cats"}'), ("c2", "{}")),
        calling("a1", "I will look that up.", ("c9", '{"q":"ca')),
        calling("a1", "I will look that up.", ("c1", '{"q":"dogs"}')),
    ):
        turn = merge(stored([user("u1"), full]), request([user("u1"), same, user("u2")]))
        assert turn.cut is None and turn.new == [user("u2")], same


def test_a_resent_unanswered_user_message_is_the_input_again():
    """The thread holds u1 without an answer (a failed run): resending it runs on it."""
    turn = merge(stored([user("u1")]), request([user("u1")]))
    assert turn.cut is None and turn.new_user == user("u1") and turn.history == []


def test_a_store_without_branches_always_appends():
    turn = merge(stored(CONVERSATION), request(CONVERSATION[:3]), branches=False)
    assert turn.cut is None and turn.new == [] and turn.history == CONVERSATION


def test_parent_run_id_names_the_branch_point():
    """The store's head of the request's parentRunId: the branch keeps what the
    thread held when that run ended, whatever the client's list says."""
    sent = [*CONVERSATION, user("u3")]
    turn = merge(stored(CONVERSATION), request(sent), parent_head="a1")
    assert turn.cut.after == "a1" and turn.new == [user("u2"), assistant("a2"), user("u3")]
    # the head at the branch's end: it appends, even where the ids would cut
    turn = merge(stored(CONVERSATION), request(CONVERSATION[:3]), parent_head="a2")
    assert turn.cut is None
    # a head off the current branch names nothing: the id rule applies
    turn = merge(stored(CONVERSATION), request(CONVERSATION[:3]), parent_head="gone")
    assert turn.cut.after == "u2"


def test_a_fresh_system_message_first_does_not_hide_a_regenerate():
    """Clients put instructions first, often under a new id each run."""
    system = {"id": "s-new", "role": "system", "content": "be brief"}
    turn = merge(stored(CONVERSATION), request([system, *CONVERSATION[:3]], run_id="r2"))
    assert turn.cut.after == "u2" and turn.new_user == user("u2")


def activity(i: str, content: dict | None = None) -> dict:
    return {"id": i, "role": "activity", "activityType": "plan", "content": content or {}}


def test_stored_activity_messages_are_no_divergence_and_survive_appends():
    """AG-UI 1.0 clients never resend activity messages (issue 20): a thread that
    holds them is matched without them, and keeps them when the client appends."""
    thread = [user("u1"), activity("p0"), assistant("a1"), activity("p9")]
    turn = merge(stored(thread), request([user("u1"), assistant("a1"), user("u2")]))
    assert turn.cut is None and turn.new == [user("u2")] and turn.new_user == user("u2")
    assert turn.base == [*thread, user("u2")] and turn.history == thread
    # an answer that was only an activity, then a new message: appended too
    only = [user("u1"), activity("p0")]
    turn = merge(stored(only), request([user("u1"), user("u2")]))
    assert turn.cut is None and turn.base == [*only, user("u2")]
    # a client that does send them (not @ag-ui/client) is matched as well
    turn = merge(stored(thread), request([*thread, user("u2")]))
    assert turn.cut is None and turn.new == [user("u2")]


def test_a_regenerate_and_an_edit_on_a_thread_with_activity_messages():
    thread = [user("u1"), activity("p0"), assistant("a1"), activity("p9")]
    turn = merge(stored(thread), request([user("u1")], run_id="r2"))
    assert turn.cut.after == "u1" and turn.new_user == user("u1") and turn.base == [user("u1")]
    edited = user("u1", "other")
    turn = merge(stored(thread), request([edited], run_id="r3"))
    assert turn.cut.after is None and turn.new_user == edited and turn.base == [edited]
    # an edit as a new message after a1: a1's own activity (p9) stays with it
    longer = [*thread, user("u2"), assistant("a2")]
    turn = merge(stored(longer), request([user("u1"), assistant("a1"), user("u9")]))
    assert turn.cut.after == "p9" and turn.base == [*thread, user("u9")]
    edited = user("u2", "other")
    turn = merge(stored(longer), request([user("u1"), assistant("a1"), edited]))
    assert turn.cut.after == "p9" and turn.base == [*thread, edited]
    # the list ends after a1, which only p9 follows: nothing to cut
    turn = merge(stored(thread), request([user("u1"), assistant("a1"), user("u9")]))
    assert turn.cut is None and turn.base == [*thread, user("u9")]
    # the answer was only an activity: regenerating it still branches and runs on u1
    only = [user("u1"), activity("p0")]
    turn = merge(stored(only), request([user("u1")], run_id="r2"))
    assert turn.cut.after == "u1" and turn.new_user == user("u1") and turn.history == []


def test_reasoning_after_a_shared_tool_result_goes_with_the_answer_it_is_for():
    """A client resends up to a tool result: the answer after it (its reasoning
    first) is replaced, and its reasoning is not kept as the new run's history
    (it was kept, and the new branch had two reasoning messages in a row)."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asked = {"id": "a1", "role": "assistant", "content": "", "toolCalls": [call]}
    result = {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "42"}
    thinking = {"id": "r2", "role": "reasoning", "content": "so the answer is"}
    thread = stored([user("u1"), asked, result, thinking, assistant("a2")])
    turn = merge(thread, request([user("u1"), asked, result], run_id="r3"))
    assert turn.cut is not None and turn.cut.after == "t1"
    assert turn.history == [user("u1"), asked] and turn.tool_results == [result]
    # Activity after a shared answer is still that answer's.
    shown = {"id": "v1", "role": "activity", "activityType": "plan", "content": {}}
    thread = stored([user("u1"), assistant("a1"), shown, user("u2"), assistant("a2")])
    turn = merge(thread, request([user("u1"), assistant("a1"), user("u9")]))
    assert turn.cut.after == "v1" and turn.history == [user("u1"), assistant("a1"), shown]


# -- cost: a long list is merged in work linear in its length -----------------


class Watched(dict):
    """A message that counts every look the merge takes at it (a key read or a comparison)."""

    looks = 0

    def get(self, *args):
        Watched.looks += 1
        return super().get(*args)

    def __getitem__(self, key):
        Watched.looks += 1
        return super().__getitem__(key)

    def __eq__(self, other):
        Watched.looks += 1
        return super().__eq__(other)

    __hash__ = None


def reordered(n: int):
    """The thread's messages resent in reverse order, then a new one."""
    held = [Watched(user(format(i, "x"), "x")) for i in range(n)]
    return stored(held), [*reversed(held), Watched(user("new", "hi"))]


def results(n: int) -> list[dict]:
    return [Watched(id=f"t{i}", role="tool", toolCallId=f"c{i}", content="42") for i in range(n)]


def unknown_results(n: int):
    """Results for tool calls the thread never made, then a new message."""
    thread = stored([Watched(user(format(i, "x"))) for i in range(n)])
    return thread, [*results(n), Watched(user("new"))]


def answered_calls(n: int):
    """A new thread: a user message, an answer making n tool calls, their n results."""
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "f", "arguments": "{}"}}
        for i in range(n)
    ]
    asked = Watched(id="a1", role="assistant", content="", toolCalls=calls)
    return None, [Watched(user("u1")), asked, *results(n)]


@pytest.mark.parametrize("case", [reordered, unknown_results, answered_calls])
def test_a_long_list_is_merged_in_work_linear_in_its_length(case):
    """A list 4x longer costs about 4x the looks at its messages, not 16x: the
    branch, or the list of results, was searched once per message (32,000
    messages held the event loop for 26 s)."""

    def looks(n: int):
        thread, sent = case(n)
        Watched.looks = 0
        turn = merge(thread, request(sent, run_id="r2"))
        return Watched.looks, turn, sent

    small, _, _ = looks(150)
    large, turn, sent = looks(600)
    assert large <= 5 * small, (small, large)
    # What the merge decides is unchanged.
    assert turn.cut is None
    if case is answered_calls:
        assert turn.tool_results == sent[2:] and turn.history == [sent[1]]
    else:
        assert turn.new == [sent[-1]] and turn.new_user == sent[-1]


def test_a_stop_during_reasoning_keeps_the_reasoning_the_page_showed():
    """Stop while the model thinks, then type: the page shows the reasoning cut
    short, and so must the thread (and the next run's history)."""
    full = {"id": "th1", "role": "reasoning", "content": "first second third"}
    shown = {"id": "th1", "role": "reasoning", "content": "first "}
    turn = merge(stored([user("u1"), full]), request([user("u1"), shown, user("u2")]))
    assert turn.cut.after == "u1" and turn.new == [shown, user("u2")]
    assert turn.history == [user("u1"), shown]


def test_a_list_that_ends_on_reasoning_asks_again_for_its_answer():
    """A retry after a stop during reasoning resends the reasoning: the answer
    it was for is regenerated on the user message before it, not on nothing."""
    thinking = {"id": "th1", "role": "reasoning", "content": "thinking"}
    thread = stored([user("u1"), thinking, assistant("a1")])
    turn = merge(thread, request([user("u1"), thinking], run_id="r2"))
    assert turn.cut is not None and turn.cut.after == "u1"
    assert turn.new_user == user("u1") and turn.history == []


def test_a_tool_result_answered_again_otherwise_branches_with_the_new_answer():
    """The user changes their answer to a frontend tool and asks again: the new
    result is the run's input (it was ignored: the agent answered the old one)."""
    call = {"id": "c1", "type": "function", "function": {"name": "confirm", "arguments": "{}"}}
    asked = {"id": "a1", "role": "assistant", "content": "", "toolCalls": [call]}
    yes = {"id": "res1", "role": "tool", "toolCallId": "c1", "content": "yes"}
    no = {**yes, "content": "no"}
    thread = stored([user("u1"), asked, yes, assistant("a2", "got: yes")])
    turn = merge(thread, request([user("u1"), asked, no], run_id="r2"))
    assert turn.cut is not None and turn.cut.after == "a1"
    assert turn.tool_results == [no] and turn.new == [no]
    # The same result resent asks for its answer again, as before.
    turn = merge(thread, request([user("u1"), asked, yes], run_id="r3"))
    assert turn.cut.after == "res1" and turn.tool_results == [yes]
