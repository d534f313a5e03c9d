// A Stop with clients/js/stop.mjs: the real @ag-ui/client runs, the page
// stops after the first text (agent.abortRun(), what assistant-ui and
// CopilotKit call), and the helper cancels the run on the server; prints
// {cancelStatus, cancelBody, shown, error}.
//
//   node stop.mjs <1.0.0|0.0.58> <agentUrl> <threadId> <runId> <headersJson>

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };
const [version, url, threadId, runId, headersJson] = process.argv.slice(2);
const { HttpAgent } = await import(PACKAGES[version]);
const { cancelOnStop } = await import(new URL("../../clients/js/stop.mjs", import.meta.url));

const agent = cancelOnStop(new HttpAgent({ url, threadId, headers: JSON.parse(headersJson) }));
agent.messages = [{ id: `u-${runId}`, role: "user", content: "one" }];
let cancelled;
let shown = "";
const stopped = new Promise((resolve) => {
  agent.subscribe({
    onTextMessageContentEvent: ({ event }) => {
      shown += event.delta;
      if (!cancelled) {
        cancelled = agent.abortRun();
        resolve();
      }
    },
  });
});
let error = null;
const running = agent.runAgent({ runId }).catch((caught) => {
  error = String(caught?.message ?? caught);
});
await Promise.race([stopped, running]);
const response = await cancelled;
await running;
console.log(
  JSON.stringify({
    cancelStatus: response?.status ?? null,
    cancelBody: response ? await response.json() : null,
    shown,
    error,
    warnings,
  }),
);
