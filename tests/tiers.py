"""Every test gets one tier, by one rule written here (a pytest plugin, loaded by conftest.py).

The tiers, cheapest first (select with ``-m``):

- ``unit``: in process: the transformer on both builds, the vectors, parity and
  differential tests, the turn functions, the ingress through ASGITransport, the
  memory and SQLite stores. ``make check`` and ``make test-pure`` run this tier.
- ``server``: starts a server process on loopback (``tests/servers.py``: granian,
  uvicorn, ``agui-bridge serve``).
- ``external``: needs PostgreSQL or redis-server (the ``pg_*``/``redis_*`` fixtures).
- ``interop``: runs Node (the real JS clients of ``tests/interop``, the CopilotKit
  runtime, the playground's bundler).
- ``browser``: drives Chromium (``tests/browser.py``).

The rule, per test, the heaviest tier wins:

1. the fixtures it uses (``FIXTURES``), also those asked for by name
   (``request.getfixturevalue("pg_url")``);
2. what its code can reach: the test function, its fixtures and, transitively,
   every function or class of a tests/ module they name. Calling a server
   spawner of ``tests/servers.py`` (``SPAWNERS``) makes it ``server``; naming a
   program (``PROGRAMS``: ``"node"``, ``"granian"``, ...) the tier it needs;
3. tier marks written on the test, its module (``pytestmark =
   pytest.mark.interop``) or a fixture's params
   (``pytest.param("postgres", marks=pytest.mark.external)``: then what that
   fixture asks for by name is its cases', each tiered by its mark). A written
   mark lower than what 1 and 2 find is an error.

Nothing found: ``unit``. That default is checked, not trusted: while a test
runs, every child process it starts is matched against its tier
(``needed_by``), and a ``unit`` test that starts node, a server, PostgreSQL,
redis-server or Chromium fails with the line to add. So a new test file is
classified without editing it, and a wrong guess fails loudly instead of
landing in the fast tier.
"""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
import types

import pytest
from _pytest.mark.structures import ParameterSet

TIERS = ("unit", "server", "external", "interop", "browser")
WHAT = {
    "unit": "in process (transformer, vectors, parity, turn functions, ASGI ingress)",
    "server": "starts a server process on loopback (tests/servers.py)",
    "external": "needs PostgreSQL or redis-server",
    "interop": "runs Node (tests/interop, the CopilotKit runtime, the playground bundler)",
    "browser": "drives headless Chromium (tests/browser.py)",
}
FIXTURES = {
    "browser": "browser",
    "context": "browser",
    "page": "browser",
    "shots": "browser",
    "pg_server": "external",
    "pg_url": "external",
    "redis_server": "external",
    "redis_url": "external",
}
# tests/servers.py's functions that start a process (free_port does not).
SPAWNERS = frozenset({"spawn", "serve", "serve_cli", "serve_uvicorn"})
NODE_NAMES = frozenset({"node", "npm", "npx"})
SERVER_NAMES = frozenset({"granian", "uvicorn", "agui-bridge", "agui_bridge.cli"})
EXTERNAL_NAMES = frozenset({"postgres", "initdb", "pg_ctl", "redis-server"})
# A program named in a test's code (a string of its own: "node", not "nodes"),
# and the tier that starting it needs (PostgreSQL and Redis: their fixtures).
PROGRAMS = {
    **dict.fromkeys(NODE_NAMES, "interop"),
    **dict.fromkeys(SERVER_NAMES, "server"),
    "chromium": "browser",
}


def _rank(tier: str) -> int:
    return TIERS.index(tier)


def heaviest(tiers) -> str:
    return max(tiers, key=_rank, default="unit")


# ---- 2. what a test's code can reach ----


def _codes(code: types.CodeType):
    """``code`` and the code of every function, lambda and comprehension inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _functions(obj):
    """The plain functions behind ``obj`` (a function, a wrapped one, or a class)."""
    obj = (getattr(obj, "hypothesis", None) and obj.hypothesis.inner_test) or obj
    if isinstance(obj, type):
        for value in vars(obj).values():
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                value = value.fget
            if inspect.isfunction(value):
                yield inspect.unwrap(value)
        return
    obj = inspect.unwrap(obj) if callable(obj) else obj
    if inspect.ismethod(obj):
        obj = obj.__func__
    if inspect.isfunction(obj):
        yield obj


TESTS = os.path.dirname(os.path.abspath(__file__))
_modules: dict[str, bool] = {}


def _ours(obj) -> bool:
    """Whether ``obj`` was defined in a file of tests/ (imported as ``tests.x`` or ``x``)."""
    name = getattr(obj, "__module__", None)
    if not isinstance(name, str):
        return False
    if name not in _modules:
        path = getattr(sys.modules.get(name), "__file__", None) or ""
        _modules[name] = os.path.dirname(os.path.abspath(path)) == TESTS if path else False
    return _modules[name]


class Reach:
    """What a function's code reaches, transitively, cached per function: the
    heaviest tier, and the fixtures it may ask for by name (the strings of code
    that calls ``request.getfixturevalue``)."""

    def __init__(self):
        self._cache: dict[object, tuple[str, frozenset[str]]] = {}

    def of(self, obj) -> tuple[str, frozenset[str]]:
        tiers, strings = ["unit"], set()
        for function in _functions(obj):
            tier, named = self._of(function)
            tiers.append(tier)
            strings |= named
        return heaviest(tiers), frozenset(strings)

    def _of(self, function) -> tuple[str, frozenset[str]]:
        if function in self._cache:
            return self._cache[function]
        self._cache[function] = ("unit", frozenset())  # a cycle adds nothing
        found, strings = ["unit"], set()
        scope = function.__globals__
        for code in _codes(function.__code__):
            names = set(code.co_names)
            consts = {c for c in code.co_consts if isinstance(c, str)}
            found += [PROGRAMS[c] for c in consts & PROGRAMS.keys()]
            if "getfixturevalue" in names:
                strings |= consts
            for name in names:
                value = scope.get(name)
                if value is None:
                    continue
                if isinstance(value, types.ModuleType):
                    if value.__name__ == "tests.servers" and SPAWNERS & names:
                        found.append("server")
                    continue
                if getattr(value, "__module__", None) == "tests.servers":
                    if name in SPAWNERS or getattr(value, "__name__", "") in SPAWNERS:
                        found.append("server")
                    continue
                if _ours(value):
                    tier, named = self.of(value)
                    found.append(tier)
                    strings |= named
        result = (heaviest(found), frozenset(strings))
        self._cache[function] = result
        return result


# ---- the rule, per collected test ----


def _marked_params(fixturedef) -> bool:
    """Whether a parametrized fixture's params carry tier marks: then the fixtures
    its code asks for by name are its cases' (each case's mark says which)."""
    return any(
        isinstance(param, ParameterSet) and any(m.name in TIERS for m in param.marks)
        for param in fixturedef.params or ()
    )


def _fixture_functions(item, names):
    """The functions of the fixtures ``names`` as ``item`` sees them (ours only)."""
    info = getattr(item, "_fixtureinfo", None)
    manager = item.session._fixturemanager
    for name in names:
        defs = info.name2fixturedefs.get(name) if info is not None else None
        if defs is None:
            defs = manager.getfixturedefs(name, item) or ()
        for fixturedef in defs:
            if _ours(fixturedef.func):
                yield fixturedef.func, _marked_params(fixturedef)


def tier_of(item, reach: Reach) -> str:
    found = ["unit"]
    found += [m.name for m in item.iter_markers() if m.name in TIERS]
    # The fixtures it asks for, then those its code asks for by name
    # (request.getfixturevalue("rsgi_url")), until nothing new is named.
    seen: set[str] = set()
    todo = set(getattr(item, "fixturenames", ()))
    tier, strings = reach.of(item.obj)
    found.append(tier)
    todo |= strings
    while todo - seen:
        names = todo - seen
        seen |= names
        found += [FIXTURES[n] for n in names & FIXTURES.keys()]
        for function, marked in _fixture_functions(item, names):
            tier, strings = reach.of(function)
            found.append(tier)
            if not marked:
                todo |= strings
    return heaviest(found)


def pytest_configure(config):
    for tier in TIERS:
        config.addinivalue_line("markers", f"{tier}: {WHAT[tier]} (tests/tiers.py)")
    _guard_children()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    reach = Reach()
    wrong = []
    for item in items:
        tier = tier_of(item, reach)
        item.stash[TIER] = tier
        written = {m.name for m in item.iter_markers() if m.name in TIERS}
        if written - {tier}:
            # Each test has exactly one tier marker, so ``-m unit`` never picks a heavier one.
            wrong.append(
                f"{item.nodeid}: marked {sorted(written - {tier})} but it is {tier!r} "
                f"({WHAT[tier]}); remove that marker (tests/tiers.py)"
            )
        elif not written:
            item.add_marker(getattr(pytest.mark, tier))
    if wrong:
        raise pytest.UsageError("tiers:\n" + "\n".join(wrong))


TIER = pytest.StashKey[str]()


# ---- the check: a test starts only the processes its tier allows ----

_running: list = []  # [item] while a test runs (its setup, call and teardown)
_wrong: dict[str, list[str]] = {}


def needed_by(argv) -> str:
    """The tier a child process needs, from its command line."""
    if isinstance(argv, (str, bytes, os.PathLike)):
        argv = [argv]
    argv = [os.fsdecode(a) for a in argv]
    if not argv:
        return "unit"
    program = os.path.basename(argv[0])
    if program in NODE_NAMES:
        return "interop"
    if program.startswith(("chromium", "chrome", "headless_shell")):
        return "browser"
    if program in EXTERNAL_NAMES:
        return "external"
    # python -m granian / uvicorn / agui_bridge.cli, or their scripts
    if program in SERVER_NAMES or any(a in SERVER_NAMES for a in argv[1:3]):
        return "server"
    return "unit"


def _guard_children():
    if getattr(subprocess.Popen._execute_child, "_tiers", False):
        return
    original = subprocess.Popen._execute_child

    def _execute_child(self, args, *rest, **kwargs):
        if _running:
            item = _running[-1]
            tier = item.stash.get(TIER, "unit")
            needed = needed_by(args)
            if _rank(needed) > _rank(tier):
                message = _misfiled(item, tier, needed, args)
                _wrong.setdefault(item.nodeid, []).append(message)
                raise RuntimeError(message)
        return original(self, args, *rest, **kwargs)

    _execute_child._tiers = True
    subprocess.Popen._execute_child = _execute_child


def _misfiled(item, tier: str, needed: str, args) -> str:
    shown = args if isinstance(args, str) else " ".join(map(str, list(args)[:4]))
    return (
        f"{item.nodeid} is in tier {tier!r} but started `{shown}`, which needs tier "
        f"{needed!r} ({WHAT[needed]}). tests/tiers.py did not see it: use the fixture or "
        f"helper that does this, or write `pytestmark = pytest.mark.{needed}` in the module."
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    _running.append(item)
    try:
        return (yield)
    finally:
        _running.pop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    wrong = _wrong.pop(item.nodeid, None)
    if wrong and report.passed:
        # The test caught the error itself: it still fails.
        report.outcome = "failed"
        report.longrepr = "\n".join(wrong)
    return report


def report_tiers(items) -> dict[str, int]:
    counts = dict.fromkeys(TIERS, 0)
    for item in items:
        counts[item.stash.get(TIER, "unit")] += 1
    return counts


def pytest_report_collectionfinish(config, start_path, items):
    if items:
        counts = report_tiers(items)
        return "tiers: " + ", ".join(f"{tier} {n}" for tier, n in counts.items())
    return None
