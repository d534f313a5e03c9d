"""CORS (agui_bridge.ops.cors) from pages on other origins in headless Chromium,
against `agui-bridge serve` with two workers: a run with the real @ag-ui/client,
a resume by Last-Event-ID, a cancel and Agent Protocol calls succeed from an
allowed origin; from another origin the browser refuses them (its preflight
gets 403)."""

from __future__ import annotations

import contextlib
import functools
import http.server
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from tests.servers import ROOT, free_port, serve_cli

ESBUILD = ROOT / "clients" / "playground" / "node_modules" / ".bin" / "esbuild"
INTEROP = ROOT / "tests" / "interop"
PAGE = """<!doctype html><meta charset="utf-8"><title>cors</title><link rel="icon" href="data:,">
<script src="agui.js"></script><body>page</body>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A folder with a page that loads @ag-ui/client (bundled by esbuild) as ``AGUI``."""
    if not ESBUILD.exists() or not (INTEROP / "node_modules" / "@ag-ui" / "client").exists():
        pytest.skip("the JS packages are not installed (make dev)")
    folder = tmp_path_factory.mktemp("site")
    entry = 'import { HttpAgent } from "@ag-ui/client"; window.AGUI = { HttpAgent };'
    subprocess.run(
        [str(ESBUILD), "--bundle", "--format=iife", "--platform=browser",
         f"--outfile={folder / 'agui.js'}", "--log-level=warning"],
        input=entry.encode(), cwd=INTEROP, check=True, timeout=120,
    )  # fmt: skip
    (folder / "index.html").write_text(PAGE)
    return folder


@contextlib.contextmanager
def static(folder: Path):
    """Serves ``folder`` on 127.0.0.1 (an origin of its own: its port)."""
    handler = functools.partial(_Quiet, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


SCENARIO = """async ({gw, auth}) => {
  const out = {};
  const headers = {authorization: auth};
  // 1. A run with @ag-ui/client.
  const agent = new AGUI.HttpAgent({url: gw + "/agui/talk", headers, threadId: "b1"});
  agent.messages = [{id: "b1-m1", role: "user", content: "one two three"}];
  const result = await agent.runAgent({runId: "b1-r1"});
  out.reply = result.newMessages.map((m) => m.content).join("");
  // 2. A resume of that run's stream after event 2 (Last-Event-ID), declaring
  // the reader's AG-UI version as clients/js/reconnect.mjs does from a 1.0 page.
  const resumed = await fetch(gw + "/threads/b1/runs/b1-r1/events", {headers: {
      ...headers, "last-event-id": "2", "agui-protocol-version": "1.0.0"}});
  out.resumeStatus = resumed.status;
  out.resumeKind = resumed.headers.get("agui-resume");
  out.resumed = await resumed.text();
  // 3. A cancel of a run going on, from the same page.
  const body = JSON.stringify({threadId: "b2", runId: "b2-r1",
                               messages: [{id: "b2-m1", role: "user", content: "slow 40"}]});
  const slow = await fetch(gw + "/agui/talk", {method: "POST", body,
      headers: {...headers, "content-type": "application/json", accept: "text/event-stream"}});
  const reader = slow.body.getReader();
  await reader.read();
  const cancel = await fetch(gw + "/threads/b2/runs/b2-r1/cancel", {method: "POST", headers});
  out.cancelStatus = cancel.status;
  let rest = "";
  for (;;) { const {done, value} = await reader.read(); if (done) break;
             rest += new TextDecoder().decode(value); }
  out.cancelledEnd = rest.includes("RUN_FINISHED");
  // 4. Agent Protocol: create a thread, read it, run on it (wait).
  const created = await fetch(gw + "/threads", {method: "POST",
      headers: {...headers, "content-type": "application/json"}, body: JSON.stringify({})});
  const thread = await created.json();
  const got = await fetch(gw + "/threads/" + thread.thread_id, {headers});
  out.apStatus = [created.status, got.status];
  const wait = await fetch(gw + "/threads/" + thread.thread_id + "/runs/wait", {method: "POST",
      headers: {...headers, "content-type": "application/json"},
      body: JSON.stringify({assistant_id: "talk",
                            input: {messages: [{role: "user", content: "a b"}]}})});
  out.apRun = wait.status;
  out.contentLocation = wait.headers.get("content-location");
  return out;
}"""

REFUSED = """async ({gw, auth}) => {
  const tries = {};
  for (const [name, call] of Object.entries({
    run: () => fetch(gw + "/agui/talk", {method: "POST", headers: {authorization: auth,
        "content-type": "application/json"}, body: JSON.stringify({threadId: "x", runId: "x",
        messages: [{id: "x", role: "user", content: "hi"}]})}),
    read: () => fetch(gw + "/threads/b1/state", {headers: {authorization: auth}}),
    simple: () => fetch(gw + "/healthz"),
  })) {
    try { const r = await call(); tries[name] = "status " + r.status; }
    catch (e) { tries[name] = "refused: " + e.name; }
  }
  return tries;
}"""


def test_cors_from_other_origins_in_chromium(site, page, browser, shots, redis_url):
    with static(site) as allowed, static(site) as other:
        # Run logs on Redis: the cancel and the resume reach either worker.
        env = {"OPS_CORS": allowed, "OPS_RUNS": redis_url}
        with serve_cli(env, target="tests.ops_apps:app", workers=2) as server:
            gw = server.base_url
            page.goto(allowed + "/index.html")
            out = page.evaluate(SCENARIO, {"gw": gw, "auth": "Bearer ann"})
            shots("allowed")
            assert out["reply"] == "you said: 3 words"
            assert out["resumeStatus"] == 200 and out["resumeKind"] == "exact"
            assert "RUN_STARTED" in out["resumed"] and "RUN_FINISHED" in out["resumed"]
            assert out["cancelStatus"] == 202 and out["cancelledEnd"]
            assert out["apStatus"] == [200, 200] and out["apRun"] == 200
            assert out["contentLocation"].startswith("/threads/")

            # Another origin: its own context (the browser logs the refusals as errors).
            ctx = browser.new_context()
            try:
                elsewhere = ctx.new_page()
                elsewhere.goto(other + "/index.html")
                tries = elsewhere.evaluate(REFUSED, {"gw": gw, "auth": "Bearer ann"})
            finally:
                ctx.close()
            assert tries == {"run": "refused: TypeError", "read": "refused: TypeError",
                             "simple": "refused: TypeError"}  # fmt: skip
            # Nothing of the refused run happened: its preflight stopped it.
            state = httpx.get(gw + "/threads/x/state", headers={"authorization": "Bearer ann"})
            assert state.status_code == 404

            # What the browser was told.
            preflight = httpx.options(gw + "/agui/talk", headers={
                "origin": other, "access-control-request-method": "POST",
                "access-control-request-headers": "authorization, content-type"})  # fmt: skip
            assert preflight.status_code == 403
            assert preflight.json()["error"]["code"] == "cors_forbidden"
            assert not [h for h in preflight.headers if h.startswith("access-control-")]
            plain = httpx.get(gw + "/healthz", headers={"origin": other})
            assert "access-control-allow-origin" not in plain.headers
            assert plain.headers["vary"] == "origin"
            good = httpx.options(gw + "/threads/b1/runs/b1-r1/events", headers={
                "origin": allowed, "access-control-request-method": "GET",
                "access-control-request-headers": "authorization, last-event-id"})  # fmt: skip
            assert good.status_code == 204
            assert good.headers["access-control-allow-origin"] == allowed
            assert "last-event-id" in good.headers["access-control-allow-headers"]
            assert int(good.headers["access-control-max-age"]) > 0
