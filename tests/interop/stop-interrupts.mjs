// Steps of one page (the real @ag-ui/client, Stop through clients/js/stop.mjs)
// around interrupts; after each step the client's pendingInterrupts and
// messages next to the thread's stored ones. Prints {steps, warnings}.
//
//   node stop-interrupts.mjs <1.0.0|0.0.58> <agentUrl> <threadId> <stepsJson>
//
// A step: {op: "send", text} | {op: "resume", payload} (every interrupt the
// page holds) | {op: "next", text, payload} (what the page can send: a resume
// of what it holds, else the text) | {op: "stop", how, after, text?, resume?}: a send (or resume)
// stopped after its `after`-th content delta, `how` "cancelOnStop" (abort +
// POST cancel), "abort" (the request only: the next run supersedes it) or
// "cancelRoute" (POST cancel from elsewhere, the page reads on).

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };
const [version, url, threadId, stepsJson] = process.argv.slice(2);
const { HttpAgent } = await import(PACKAGES[version]);
const { cancelOnStop } = await import(new URL("../../clients/js/stop.mjs", import.meta.url));

const base = new URL(url).origin;
const agent = cancelOnStop(new HttpAgent({ url, threadId }));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const canon = (v) =>
  Array.isArray(v)
    ? v.map(canon)
    : v && typeof v === "object"
      ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, canon(v[k])]))
      : v;
const shownOf = (messages) =>
  canon(
    messages.map((m) => {
      const { metadata, ...rest } = m; // the stored copy's metadata.custom.agui is the server's
      return rest;
    }),
  );

const steps = [];
let n = 0;
for (const step of JSON.parse(stepsJson)) {
  n += 1;
  const runId = `r${n}`;
  const params = { runId };
  if (step.op === "next") step.op = agent.pendingInterrupts.length ? "resume" : "send";
  if (step.text && step.op !== "resume") agent.addMessage({ id: `u${n}`, role: "user", content: step.text });
  if (step.op === "resume" || step.resume !== undefined) {
    const payload = step.payload ?? step.resume;
    params.resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload }));
  }
  let error = null;
  let seen = 0;
  let stopped;
  const subscriber = {
    onEvent: ({ event }) => {
      if (step.op !== "stop" || stopped || !/(CONTENT|ARGS)$/.test(event.type)) return;
      if (++seen < step.after) return;
      if (step.how === "cancelRoute") {
        stopped = fetch(`${base}/threads/${threadId}/runs/${runId}/cancel`, { method: "POST" });
      } else if (step.how === "cancelOnStop") {
        stopped = agent.abortRun();
      } else {
        stopped = Promise.resolve(HttpAgent.prototype.abortRun.call(agent));
      }
    },
  };
  try {
    await agent.runAgent(params, subscriber);
  } catch (caught) {
    error = String(caught?.message ?? caught);
  }
  await stopped;
  // The stopped run's save (the next run waits for it anyway; the state read does not).
  await sleep(step.op === "stop" ? 1500 : 100);
  const state = await (await fetch(`${base}/threads/${threadId}/state`)).json();
  steps.push({
    op: step.op,
    error,
    pending: agent.pendingInterrupts.map((i) => i.id),
    stored: (state.pendingInterrupts ?? []).map((i) => i.id),
    sameMessages: JSON.stringify(shownOf(agent.messages)) === JSON.stringify(shownOf(state.messages ?? [])),
  });
}
console.log(JSON.stringify({ steps, warnings }));
