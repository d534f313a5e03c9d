// Regenerate and edit with the real @ag-ui/client, as a chat page does them:
// the page sets the messages it shows (cut at the regenerated or edited
// message) and runs the agent under a new runId. After each step prints what
// the page shows and what GET /threads/{id}/state then holds.
//
//   node branches.mjs <1.0.0|0.0.58> <agentUrl> <baseUrl> <threadId> <headersJson>

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };
const [version, url, base, threadId, headersJson] = process.argv.slice(2);
const headers = JSON.parse(headersJson);
const { HttpAgent } = await import(PACKAGES[version]);

const agent = new HttpAgent({ url, threadId, headers });
const view = (messages) => messages.map(({ id, role, content }) => ({ id, role, content }));
const steps = [];

async function step(name, messages, runId) {
  agent.messages = messages;
  let error = null;
  try {
    await agent.runAgent({ runId });
  } catch (caught) {
    error = String(caught?.message ?? caught);
  }
  const state = await (await fetch(`${base}/threads/${threadId}/state`, { headers })).json();
  steps.push({ name, error, shown: view(agent.messages), stored: view(state.messages ?? []) });
}

const u1 = { id: "u1", role: "user", content: "hello" };
await step("send", [u1], "r1");
const first = agent.messages;
await step("regenerate", first.slice(0, 1), "r2");
await step("edit under the same id", [{ ...u1, content: "hi again" }], "r3");
await step("follow up", [...agent.messages, { id: "u2", role: "user", content: "more" }], "r4");
const kept = agent.messages.slice(0, 2);
await step("edit as a new message", [...kept, { id: "u3", role: "user", content: "instead" }], "r5");
console.log(JSON.stringify({ steps, warnings }));
