"""Every transformer test runs on both builds through the ``impl`` fixture; ``both``
hands a test the two builds at once (parity and differential tests)."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess

import pytest

from tests.builds import PURE, native_build

# The browser fixtures (browser, context, page, shots): headless Chromium; every
# test's tier (unit, server, external, interop, browser): tests/tiers.py.
pytest_plugins = ["tests.browser", "tests.tiers"]


def _builds():
    builds = [pytest.param("python", id="py")]
    if not PURE:
        builds.insert(0, pytest.param("rust", id="rust", marks=pytest.mark.native_only))
    return builds


def pytest_configure(config):
    config.addinivalue_line("markers", "native_only: needs the Rust build")


@pytest.fixture(params=_builds(), scope="session")
def impl(request):
    """The module of one build: ``agui_bridge._native`` or ``agui_bridge.pure``."""
    if request.param == "rust":
        return native_build()
    return importlib.import_module("agui_bridge.pure")


@pytest.fixture(scope="session")
def both():
    """``(native, pure)``, for tests that compare the builds (marked ``native_only``)."""
    if PURE:
        pytest.skip("AGUI_BRIDGE_PURE=1: the Rust build is deselected")
    return native_build(), importlib.import_module("agui_bridge.pure")


# -- thread stores: memory, SQLite and PostgreSQL through one fixture ------------


def _unavailable(reason: str):
    """PostgreSQL missing: a failure in CI, a skip (with the reason) elsewhere."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL is required in CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL unavailable: {reason}")


@pytest.fixture(scope="session")
def pg_server():
    """One PostgreSQL server for the whole session, stopped at its end."""
    from tests.pg_server import PgServer, Unavailable

    try:
        import asyncpg  # noqa: F401
    except ImportError:
        _unavailable("asyncpg is not installed (make dev)")
    try:
        server = PgServer()
    except Unavailable as error:
        _unavailable(str(error))
    try:
        server.start()
    except (Unavailable, OSError, subprocess.SubprocessError) as error:
        server.stop()
        _unavailable(str(error))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server):
    """The URL of a fresh database of the session's server, dropped after the test."""
    name = pg_server.create_database()
    try:
        yield pg_server.url(name)
    finally:
        pg_server.drop_database(name)


# The postgres case needs PostgreSQL (tier external, tests/tiers.py); the others run in process.
@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.external)])
def make_store(request, tmp_path):
    """``make()`` opens a store of one kind; every call reaches the same data
    (a reopen), except for memory, which has none outside its object."""
    from agui_bridge.store import MemoryStore, SqliteStore

    kind = request.param
    url = request.getfixturevalue("pg_url") if kind == "postgres" else None

    def make():
        if kind == "memory":
            return MemoryStore()
        if kind == "sqlite":
            return SqliteStore(str(tmp_path / "sub" / "threads.sqlite"))
        from agui_bridge.store.postgres import PostgresStore

        return PostgresStore(url)

    make.kind = kind
    make.url = url
    return make


# -- Redis (shared run logs): one server per session, a database per test --------


@pytest.fixture(scope="session")
def redis_server():
    """One redis-server for the whole session (a failure in CI when missing)."""
    from tests.redis_server import RedisServer, Unavailable

    def unavailable(reason: str):
        if os.environ.get("CI") == "true":
            pytest.fail(f"redis-server is required in CI: {reason}", pytrace=False)
        pytest.skip(f"Redis unavailable: {reason}")

    try:
        import redis  # noqa: F401
    except ImportError:
        unavailable("redis-py is not installed (make dev)")
    try:
        server = RedisServer().start()
    except (Unavailable, OSError) as error:
        unavailable(str(error))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server):
    """The URL of a flushed database of the session's redis-server."""
    return redis_server.url(redis_server.fresh_db())


@pytest.fixture(scope="module")
def nodes(redis_server, pg_server):
    """Two gateway nodes (RSGI and ASGI) of ``tests.agent_protocol_apps`` sharing run
    logs on Redis and threads on PostgreSQL: the Agent Protocol's cross-node tests."""
    with agent_protocol_nodes(redis_server, pg_server) as (a, b, _):
        yield a, b


@contextlib.contextmanager
def agent_protocol_nodes(redis_server, pg_server, env: dict | None = None):
    """``nodes`` with more of the app's environment (``tests.agent_protocol_apps``);
    yields the two URLs and the environment, for a third node."""
    from tests.servers import serve

    database = pg_server.create_database()
    env = {
        "AGUI_TEST_RUNS": redis_server.url(redis_server.fresh_db()),
        "AGUI_TEST_STORE": pg_server.url(database),
        "AGUI_DEMO_DELAY": "0",
        **(env or {}),
    }
    try:
        with (
            serve("tests.agent_protocol_apps:app", env=env) as a,
            serve("tests.agent_protocol_apps:app", env=env, interface="asgi") as b,
        ):
            yield a, b, env
    finally:
        pg_server.drop_database(database)
