// Run streams with the real @ag-ui/client and clients/js/reconnect.mjs; prints
// one JSON result. Any console.warn / console.error of the client is recorded.
//
//   node streams.mjs <1.0.0|0.0.58> <scenario.json>
//
// scenario: {url, threadId, runId, text, joins: [delayMs...], gate?, afterEnd: bool,
//            cuts: [frames...]}
// - join mode (joins/afterEnd): one client runs `text`; joiners connect to the
//   thread's active run after each delay, and (afterEnd) one joins the finished
//   run; every client's final messages and state are reported.
// - cut mode (cuts): one client runs `text` through a fetch whose response
//   bodies fail after cuts[i] frames (request i), so it must resume by id.

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };
const [version, scenarioPath] = process.argv.slice(2);

const { readFile } = await import("node:fs/promises");
const scenario = JSON.parse(await readFile(scenarioPath, "utf8"));
const { HttpAgent } = await import(PACKAGES[version]);
const { Observable } = await import("rxjs");
const { withReconnect } = await import(new URL("../../clients/js/reconnect.mjs", import.meta.url));
const Agent = withReconnect(HttpAgent, Observable);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const view = (agent) => ({ messages: agent.messages, state: agent.state });
const user = { id: `u-${scenario.runId}`, role: "user", content: scenario.text };

// A fetch whose i-th response body fails (a dropped connection) after cuts[i] frames.
function cuttingFetch(cuts) {
  let request = 0;
  return async (url, init) => {
    const response = await fetch(url, init);
    const cut = cuts[request++];
    if (cut === undefined || !response.body) return response;
    const reader = response.body.getReader();
    let frames = 0;
    const body = new ReadableStream({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        let end = value.length;
        for (let i = 0; i + 1 < value.length; i++) {
          if (value[i] === 10 && value[i + 1] === 10 && ++frames >= cut) {
            end = Math.min(value.length, i + 7); // a few bytes of the next frame too
            break;
          }
        }
        controller.enqueue(value.slice(0, end));
        if (frames >= cut) {
          reader.cancel().catch(() => {});
          controller.error(new TypeError("network connection lost"));
        }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

const result = { warnings };
try {
  if (scenario.cuts) {
    const agent = new Agent({ url: scenario.url, threadId: scenario.threadId, fetch: cuttingFetch(scenario.cuts), reconnect: { baseDelayMs: 20 } });
    agent.addMessage(user);
    const events = [];
    await agent.runAgent({ runId: scenario.runId }, { onEvent: ({ event }) => void events.push(event.type) });
    result.cut = { ...view(agent), events, lastEventId: agent.lastEventId };
  } else {
    const full = new Agent({ url: scenario.url, threadId: scenario.threadId });
    full.addMessage(user);
    let started;
    const startedAt = new Promise((resolve) => (started = resolve));
    const running = full.runAgent({ runId: scenario.runId }, { onRunStartedEvent: () => void started() });
    // Delays count from the moment the whole-run client saw RUN_STARTED.
    const joined = [];
    const joins = (scenario.joins ?? []).map(async (delay) => {
      await startedAt;
      await sleep(delay);
      const joiner = new Agent({ url: scenario.url, threadId: scenario.threadId });
      let seen;
      joined.push(new Promise((resolve) => (seen = resolve)));
      await joiner.connectAgent({}, { onRunStartedEvent: () => void seen() });
      return view(joiner);
    });
    if (scenario.gate) {
      // The run ends only once every joiner is in (a loaded machine must not
      // turn a join into a join after the end).
      await startedAt;
      await sleep(Math.max(...scenario.joins) + 50);
      await Promise.all(joined);
      const { writeFile } = await import("node:fs/promises");
      await writeFile(scenario.gate, "1");
    }
    await running;
    result.full = view(full);
    result.joins = await Promise.all(joins);
    if (scenario.afterEnd) {
      const late = new Agent({ url: scenario.url, threadId: scenario.threadId });
      late.joinRunId = scenario.runId;
      await late.connectAgent();
      result.afterEnd = view(late);
    }
  }
  result.ok = warnings.length === 0;
} catch (error) {
  result.ok = false;
  result.error = `${error?.name}: ${error?.message}`;
}
process.stdout.write(JSON.stringify(result) + "\n");
