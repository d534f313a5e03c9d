"""Awaiting the rest of an async generator's step that ``drive`` stopped at.

``t.drive`` runs the agent's generator step by step itself (no bytecode per
item); when a step awaits something (a model's next chunk, a sleep), it hands
the step back. ``await Resume(step, awaited)`` then does what ``await`` would
have done from there: it passes ``awaited`` up to the task, sends the task's
answers and throws its exceptions (a cancel) into the step, and gives the
item the step finally returns (``StopAsyncIteration`` when the generator ends).
"""

from __future__ import annotations


class Resume:
    __slots__ = ("awaited", "step")

    def __init__(self, step, awaited):
        self.step = step
        self.awaited = awaited

    def __await__(self):
        step, awaited = self.step, self.awaited
        while True:
            try:
                answer = yield awaited
            except GeneratorExit:
                step.close()
                raise
            except BaseException as error:  # a cancel, or what the awaited future raised
                try:
                    awaited = step.throw(error)
                except StopIteration as returned:
                    return returned.value
                continue
            try:
                awaited = step.send(answer)
            except StopIteration as returned:
                return returned.value
