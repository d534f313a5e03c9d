// Drives the real @ag-ui/client HttpAgent against a live server and prints one
// JSON result on stdout. The client's own pipeline is the judge: any rejection,
// and any console.warn / console.error (the client reports "[ag-ui]" problems,
// failed patches and unknown ids that way), makes `ok` false.
//
//   node run-agent.mjs <client-version> <url> <scenario.json>
//
// <client-version>: "1.0.0" (@ag-ui/client) or "0.0.58" (npm alias client-0058).
// A scenario is {threadId?, initialMessages?, initialState?, pendingInterrupts?, headers?,
// runs: [run...]}
// and each run is {setMessages?, addMessages?, tools?, context?, forwardedProps?, resume?,
// resumePending?: {status, payload?}, answerToolCalls?: string, url?}. `setMessages` replaces the agent's
// messages first (a fresh tab that only knows the threadId). All runs share one HttpAgent, so
// messages, state and pendingInterrupts carry from one run to the next, as in
// a browser tab. `resumePending` builds the 1.0 `resume` list from the agent's
// own pendingInterrupts (what a UI does when the user answers); `answerToolCalls`
// adds a tool message with that content for every unanswered tool call (a
// frontend tool).

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };

const [version, url, scenarioPath] = process.argv.slice(2);
if (!PACKAGES[version] || !url || !scenarioPath) {
  process.stderr.write("usage: node run-agent.mjs <1.0.0|0.0.58> <url> <scenario.json>\n");
  process.exit(2);
}

const { readFile } = await import("node:fs/promises");
const scenario = JSON.parse(await readFile(scenarioPath, "utf8"));
const client = await import(PACKAGES[version]);
const { HttpAgent } = client;

const agent = new HttpAgent({
  url,
  threadId: scenario.threadId,
  initialMessages: scenario.initialMessages ?? [],
  initialState: scenario.initialState ?? {},
  headers: scenario.headers ?? {},
});

// A page that kept its pending interrupts across a reload (or a server restart).
if (scenario.pendingInterrupts) agent.pendingInterrupts = scenario.pendingInterrupts;

const runs = [];
let ok = true;
for (const [index, spec] of (scenario.runs ?? [{}]).entries()) {
  if (spec.url) agent.url = spec.url;
  if (spec.setMessages) agent.setMessages(spec.setMessages);
  for (const message of spec.addMessages ?? []) agent.addMessage(message);
  if (spec.answerToolCalls !== undefined) {
    // What a frontend tool does: answer every tool call that has no result yet.
    const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
    for (const message of [...agent.messages]) {
      for (const call of message.toolCalls ?? []) {
        if (answered.has(call.id)) continue;
        agent.addMessage({
          id: `result-${call.id}`,
          role: "tool",
          toolCallId: call.id,
          content: spec.answerToolCalls,
        });
      }
    }
  }
  const params = {
    tools: spec.tools ?? [],
    context: spec.context ?? [],
    forwardedProps: spec.forwardedProps ?? {},
  };
  if (spec.resume) params.resume = spec.resume;
  if (spec.resumePending) {
    params.resume = (agent.pendingInterrupts ?? []).map((interrupt) => ({
      interruptId: interrupt.id,
      status: spec.resumePending.status ?? "resolved",
      ...(spec.resumePending.payload !== undefined && { payload: spec.resumePending.payload }),
    }));
  }
  const warningsBefore = warnings.length;
  const events = [];
  let failed;
  const subscriber = {
    onEvent: ({ event }) => {
      events.push(event);
    },
    onRunFailed: ({ error }) => {
      failed = String(error?.message ?? error);
    },
  };
  const run = {
    index,
    ok: true,
    error: null,
    request: { resume: params.resume ?? null },
    pendingBefore: structuredClone(agent.pendingInterrupts ?? null),
  };
  try {
    const result = await agent.runAgent(params, subscriber);
    run.result = result?.result ?? null;
    run.newMessages = result?.newMessages ?? [];
  } catch (error) {
    run.ok = false;
    run.error = String(error?.message ?? error);
  }
  if (failed && !run.error) {
    run.ok = false;
    run.error = failed;
  }
  run.warnings = warnings.slice(warningsBefore);
  if (run.warnings.length) run.ok = false;
  run.events = events;
  run.messages = structuredClone(agent.messages);
  run.state = structuredClone(agent.state);
  run.pendingInterrupts = structuredClone(agent.pendingInterrupts ?? null);
  runs.push(run);
  if (!run.ok) {
    ok = false;
    break;
  }
}

const out = {
  ok: ok && warnings.length === 0,
  clientVersion: version,
  threadId: agent.threadId,
  warnings,
  runs,
  messages: agent.messages,
  state: agent.state,
  pendingInterrupts: agent.pendingInterrupts ?? null,
};
process.stdout.write(JSON.stringify(out) + "\n");
