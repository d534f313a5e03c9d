// Drives the real CopilotKit browser core (`CopilotKitCore` from @copilotkit/core)
// against a CopilotKit runtime, making the calls the React v2 hooks make, and
// prints one JSON result on stdout.
//
//   node copilotkit-client.mjs <core-version> <runtime-url> <scenario.json>
//
// <core-version>: "1.74.0" (@copilotkit/core, the one @copilotkit/react-core 1.74.0
// pins) or "1.75.0" (npm alias copilotkit-core-175).
// A scenario is {threadId, agentId?, pages: [[step...]...]}. Each page is a fresh
// CopilotKitCore (a page load): CopilotKitProvider's `connect()`, then what
// CopilotChat does for an explicit threadId (`connectAgent`). A step is
// {setState?: object} (useAgent's agent.setState, merged), then {say: text} (CopilotChat's submit: `addMessage` + `runAgent`), {resolve: payload}
// or {cancel: true} (useInterrupt's resolve/cancel: `runAgent({agent, resume, runId})`
// under the interrupted run's id).
// Any console.warn/console.error, any error the core reports (CopilotKitProvider
// logs them with console.error) and any unhandled rejection makes `ok` false.
// Per step the output has the client's `messages`, `state`, the pending interrupt
// (`pending`) and the runIds of the runs the step started (`runIds`).

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.74.0": "@copilotkit/core", "1.75.0": "copilotkit-core-175" };

const [version, runtimeUrl, scenarioPath] = process.argv.slice(2);
if (!PACKAGES[version] || !runtimeUrl || !scenarioPath) {
  process.stderr.write("usage: node copilotkit-client.mjs <1.74.0|1.75.0> <runtime-url> <scenario.json>\n");
  process.exit(2);
}

// CopilotKitCore only contacts a runtime in a browser (`typeof window`); it
// reads window.location to resolve URLs and nothing else that matters here.
const origin = new URL(runtimeUrl).origin;
globalThis.window = { location: { href: `${origin}/`, origin } };

const { readFile } = await import("node:fs/promises");
const scenario = JSON.parse(await readFile(scenarioPath, "utf8"));
const { CopilotKitCore, CopilotKitCoreRuntimeConnectionStatus: Status, ɵInterruptState } = await import(
  PACKAGES[version]
);

// What CopilotKitProvider does on mount: a core with the runtime URL, its
// errors logged, `connect()`; the hooks wait for the runtime's agents.
async function loadPage() {
  const copilotkit = new CopilotKitCore({ runtimeUrl, deferInitialConnection: true, runtimeTransport: "auto" });
  copilotkit.subscribe({
    onError: (event) => console.error(`[CopilotKit] Error (${event.code}):`, event.error, event.context ?? {}),
  });
  const settled = new Promise((resolve) => {
    const subscription = copilotkit.subscribe({
      onRuntimeConnectionStatusChanged: ({ status }) => {
        if (status === Status.Connected || status === Status.Error) {
          subscription.unsubscribe();
          resolve(status);
        }
      },
    });
  });
  copilotkit.connect();
  const status = await settled;
  if (status !== Status.Connected) throw new Error(`the runtime connection ended ${status}`);
  const agent = copilotkit.getAgent(scenario.agentId ?? "default");
  if (!agent) throw new Error(`the runtime has no agent ${scenario.agentId ?? "default"}`);
  return { copilotkit, agent };
}

// useInterrupt's subscription and resolve/cancel, as in @copilotkit/react-core's v2 hook.
function useInterrupt(copilotkit, agent) {
  const interruptState = new ɵInterruptState();
  const interruptRunIds = new Map();
  let legacyRunId;
  let localLegacy = null;
  let localStandard = null;
  agent.subscribe({
    onCustomEvent: ({ event }) => {
      if (event.name === "on_interrupt") localLegacy = { name: event.name, value: event.value };
    },
    onRunFinishedEvent: (params) => {
      if (params.outcome === "interrupt") {
        for (const interrupt of params.interrupts) interruptRunIds.set(interrupt.id, params.input.runId);
        localStandard = params.interrupts;
      }
    },
    onRunStartedEvent: () => {
      localLegacy = null;
      localStandard = null;
      interruptRunIds.clear();
      legacyRunId = undefined;
      interruptState.clear();
    },
    onRunFinalized: (params) => {
      if (localStandard && localStandard.length > 0) interruptState.setStandard(localStandard);
      else if (localLegacy) {
        legacyRunId = params.input.runId;
        interruptState.setLegacy(localLegacy);
      }
      localLegacy = null;
      localStandard = null;
    },
    onRunFailed: () => {
      localLegacy = null;
      localStandard = null;
      interruptRunIds.clear();
      legacyRunId = undefined;
      interruptState.clear();
    },
  });
  async function answer(decision) {
    if (decision.kind === "legacy-resume") {
      return copilotkit.runAgent({
        agent,
        ...(legacyRunId !== undefined ? { runId: legacyRunId } : {}),
        forwardedProps: { command: { resume: decision.payload, interruptEvent: decision.interruptValue } },
      });
    }
    if (decision.kind !== "resume") throw new Error(`useInterrupt would not resume: ${decision.kind}`);
    const runId = decision.resume.map((entry) => interruptRunIds.get(entry.interruptId)).find((id) => id !== undefined);
    for (const toolResult of decision.toolResults) {
      agent.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId: toolResult.toolCallId, content: toolResult.content });
    }
    return copilotkit.runAgent({ agent, resume: decision.resume, ...(runId !== undefined ? { runId } : {}) });
  }
  return {
    get pending() {
      return interruptState.pending;
    },
    resolve: (payload, interruptId) => answer(interruptState.resolve(payload, interruptId)),
    cancel: (interruptId) => answer(interruptState.cancel(interruptId)),
  };
}

const pages = [];
let ok = true;
try {
  for (const [pageIndex, steps] of (scenario.pages ?? [[]]).entries()) {
    const { copilotkit, agent } = await loadPage();
    const interrupt = useInterrupt(copilotkit, agent);
    agent.threadId = scenario.threadId;
    await copilotkit.connectAgent({ agent });
    const page = { index: pageIndex, connected: structuredClone(agent.messages), steps: [] };
    let runIds = [];
    agent.subscribe({ onRunStartedEvent: ({ input }) => void runIds.push(input.runId) });
    for (const step of steps) {
      const before = warnings.length;
      const record = { step, pendingBefore: structuredClone(interrupt.pending) };
      runIds = [];
      if (step.setState !== undefined) agent.setState({ ...agent.state, ...step.setState });
      if (step.say !== undefined) {
        agent.addMessage({ id: crypto.randomUUID(), role: "user", content: step.say });
        await copilotkit.runAgent({ agent });
      } else if (step.resolve !== undefined) {
        await interrupt.resolve(step.resolve);
      } else if (step.cancel) {
        await interrupt.cancel();
      }
      record.runIds = runIds;
      record.messages = structuredClone(agent.messages);
      record.state = structuredClone(agent.state);
      record.pending = structuredClone(interrupt.pending);
      record.warnings = warnings.slice(before);
      page.steps.push(record);
    }
    page.messages = structuredClone(agent.messages);
    page.state = structuredClone(agent.state);
    pages.push(page);
  }
} catch (error) {
  ok = false;
  warnings.push({ level: "harness", text: String(error?.stack ?? error) });
}

const out = { ok: ok && warnings.length === 0, coreVersion: version, threadId: scenario.threadId, warnings, pages };
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
