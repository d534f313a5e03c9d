// Activity messages (AG-UI 1.0 role "activity") with the real @ag-ui/client, as
// a chat page shows them: a run held mid-way that a second page joins, then a
// follow-up, a regenerate and an edit. After each step prints what the page
// shows, what GET /threads/{id}/state holds and what a reload (a fresh page
// joining the step's run) shows.
//
//   node activity.mjs <1.0.0|0.0.58> <agentUrl> <baseUrl> <threadId> <marksDir>

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };
const [version, url, base, threadId, marks] = process.argv.slice(2);
const { HttpAgent } = await import(PACKAGES[version]);
const { Observable } = await import("rxjs");
const { writeFile } = await import("node:fs/promises");
const { withReconnect } = await import(new URL("../../clients/js/reconnect.mjs", import.meta.url));
const Agent = withReconnect(HttpAgent, Observable);

const stored = async () => (await (await fetch(`${base}/threads/${threadId}/state`)).json()).messages;
const steps = [];

async function reload(runId) {
  const page = new Agent({ url, threadId });
  page.joinRunId = runId;
  await page.connectAgent();
  return page.messages;
}

async function attempt(promise) {
  try {
    await promise;
    return null;
  } catch (caught) {
    return String(caught?.message ?? caught);
  }
}

async function record(name, runId, shown, extra = {}) {
  shown = structuredClone(shown); // the page goes on with the same list
  steps.push({ name, shown, stored: await stored(), reloaded: await reload(runId), ...extra });
}

// 1. The run holds with its answer open; a second page joins it there.
const page = new Agent({ url, threadId });
page.addMessage({ id: "u1", role: "user", content: "wait: plan it" });
let deltaSeen;
const delta = new Promise((resolve) => (deltaSeen = resolve));
const running = attempt(page.runAgent({ runId: "r1" }, { onActivityDeltaEvent: () => deltaSeen() }));
await Promise.race([delta, running]);
const joiner = new Agent({ url, threadId });
let snapshotSeen;
const snapshot = new Promise((resolve) => (snapshotSeen = resolve));
let atJoin = null;
const joining = attempt(
  joiner.connectAgent({}, { onMessagesSnapshotEvent: ({ event }) => void snapshotSeen((atJoin = event.messages)) }),
);
await Promise.race([snapshot, joining]);
await writeFile(`${marks}/go-${threadId}`, "1");
const errors = [await running, await joining];
await record("run", "r1", page.messages, { errors, joined: joiner.messages, atJoin });

// 2. A follow-up: the page resends its list (activity messages left out by the client).
page.addMessage({ id: "u2", role: "user", content: "more" });
let error = await attempt(page.runAgent({ runId: "r2" }));
await record("follow up", "r2", page.messages, { errors: [error] });

// 3. Regenerate the follow-up's answer: the page cuts after u2.
page.messages = page.messages.slice(0, page.messages.findIndex((m) => m.id === "u2") + 1);
error = await attempt(page.runAgent({ runId: "r3" }));
await record("regenerate", "r3", page.messages, { errors: [error] });

// 4. Edit as a new message after the first answer (its activity messages kept).
const cut = page.messages.findIndex((m) => m.id === "u2");
page.messages = [...page.messages.slice(0, cut), { id: "u3", role: "user", content: "instead" }];
error = await attempt(page.runAgent({ runId: "r4" }));
await record("edit", "r4", page.messages, { errors: [error] });

console.log(JSON.stringify({ steps, warnings }));
