// Drives the real `LangGraphAgent` of `@ag-ui/langgraph` (what CopilotKit's
// runtime runs for a LangGraph deployment) against agui-bridge's Agent Protocol
// and prints one JSON result on stdout. `@ag-ui/client`'s own pipeline (the
// AbstractAgent it extends: verifyEvents, the default reducer) is the judge: any
// rejection, any console.warn / console.error, makes `ok` false.
//
//   node langgraph-agent.mjs <deployment-url> <scenario.json>
//
// A scenario is {threadId, graphId, emitInterruptOutcome?, timeoutMs?, runs: [run...]};
// a run is {addMessages?, regenerateFrom?, resumePending?: {status?, payload?},
// forwardedProps?, expectFailure?}. All runs share one agent, as a browser tab
// would. `regenerateFrom` (a user message id) cuts the agent's messages after
// that message and gives its earlier answers ids the thread does not hold (what
// makes @ag-ui/langgraph regenerate instead of continue); `resumePending` answers the agent's own
// pendingInterrupts (AG-UI 1.0 `resume`). A run that takes longer than
// `timeoutMs` (default 30 s) fails with "timed out".

import { randomUUID } from "node:crypto";
import { warnings } from "./console-guard.mjs";

const [deploymentUrl, scenarioPath] = process.argv.slice(2);
if (!deploymentUrl || !scenarioPath) {
  process.stderr.write("usage: node langgraph-agent.mjs <deployment-url> <scenario.json>\n");
  process.exit(2);
}

const { readFile } = await import("node:fs/promises");
const scenario = JSON.parse(await readFile(scenarioPath, "utf8"));
const { LangGraphAgent } = await import("@ag-ui/langgraph");

const agent = new LangGraphAgent({
  deploymentUrl,
  graphId: scenario.graphId,
  threadId: scenario.threadId,
  emitInterruptOutcome: scenario.emitInterruptOutcome ?? false,
});

const runs = [];
let ok = true;
for (const [index, spec] of (scenario.runs ?? []).entries()) {
  if (spec.regenerateFrom) {
    // The history up to that user message, its answers under ids the client
    // never learned (what sends @ag-ui/langgraph down its regenerate path).
    const messages = agent.messages;
    const at = messages.findIndex((m) => m.id === spec.regenerateFrom);
    agent.setMessages(
      messages.slice(0, at + 1).map((m) => (m.role === "assistant" ? { ...m, id: randomUUID() } : m)),
    );
  }
  for (const message of spec.addMessages ?? []) agent.addMessage(message);
  const params = { tools: [], context: [], forwardedProps: spec.forwardedProps ?? {} };
  if (spec.resumePending) {
    params.resume = (agent.pendingInterrupts ?? []).map((interrupt) => ({
      interruptId: interrupt.id,
      status: spec.resumePending.status ?? "resolved",
      ...(spec.resumePending.payload !== undefined && { payload: spec.resumePending.payload }),
    }));
  }
  const warningsBefore = warnings.length;
  const events = [];
  const run = { index, ok: true, error: null };
  let timer;
  try {
    const result = await Promise.race([
      agent.runAgent(params, { onEvent: ({ event }) => void events.push(event) }),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("timed out")), scenario.timeoutMs ?? 30000);
      }),
    ]);
    run.newMessages = result?.newMessages ?? [];
  } catch (error) {
    run.ok = false;
    run.error = String(error?.message ?? error);
  } finally {
    clearTimeout(timer);
  }
  run.warnings = warnings.slice(warningsBefore);
  if (run.warnings.length) run.ok = false;
  run.events = events.map(({ rawEvent, ...event }) => event); // rawEvent: the server's own part
  run.messages = structuredClone(agent.messages);
  run.state = structuredClone(agent.state);
  run.pendingInterrupts = structuredClone(agent.pendingInterrupts ?? null);
  runs.push(run);
  if (!run.ok) {
    ok = false;
    if (!spec.expectFailure) break;
  }
}

const out = { ok: ok && warnings.length === 0, threadId: agent.threadId, warnings, runs };
// Exits once the output is written (a pipe takes it in pieces): a timed-out run
// leaves the client's requests open.
process.stdout.write(`${JSON.stringify(out)}\n`, () => process.exit(0));
