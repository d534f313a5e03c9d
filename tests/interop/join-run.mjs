// A page joining a run it did not start, with the real @ag-ui/client and
// clients/js/reconnect.mjs; prints one JSON result.
//
//   node join-run.mjs <1.0.0|0.0.58> <agentUrl> <threadId> <runId|-> <cutFrames> <markFile>
//
// runId "-": the thread's active run (GET /threads/{id}/events); else that run
// (joinRunId). cutFrames > 0: the first response fails after that many frames,
// so the page resumes by Last-Event-ID. markFile is written once RUN_STARTED
// is seen. Every event the page's subscriber sees is parsed with the client's
// own core's EventSchemas (as its HTTP pipeline does); `ok` is false on any
// schema issue, console warning or error, or a rejected connectAgent().

import { warnings } from "./console-guard.mjs";

const PACKAGES = { "1.0.0": ["@ag-ui/client", "@ag-ui/core/schemas"], "0.0.58": ["client-0058", "core-0058"] };
const [version, url, threadId, runId, cut, mark] = process.argv.slice(2);
const { HttpAgent } = await import(PACKAGES[version][0]);
const { EventSchemas } = await import(PACKAGES[version][1]);
const { Observable } = await import("rxjs");
const { writeFile } = await import("node:fs/promises");
const { withReconnect } = await import(new URL("../../clients/js/reconnect.mjs", import.meta.url));
const Agent = withReconnect(HttpAgent, Observable);

// The first response's body fails (a dropped connection) after `frames` frames.
function cuttingFetch(frames) {
  let first = true;
  return async (target, init) => {
    const response = await fetch(target, init);
    if (!first || frames <= 0 || !response.body) return response;
    first = false;
    const reader = response.body.getReader();
    let seen = 0;
    const body = new ReadableStream({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) return controller.close();
        let end = value.length;
        for (let i = 0; i + 1 < value.length; i++) {
          if (value[i] === 10 && value[i + 1] === 10 && ++seen >= frames) {
            end = i + 2;
            break;
          }
        }
        controller.enqueue(value.slice(0, end));
        if (seen >= frames) {
          reader.cancel().catch(() => {});
          controller.error(new TypeError("network connection lost"));
        }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
}

const result = { warnings, events: [], invalid: [], requests: [] };
try {
  const cutting = cuttingFetch(Number(cut));
  const fetchLogged = (target, init) => {
    result.requests.push({ url: String(target), lastEventId: init?.headers?.["Last-Event-ID"] ?? null });
    return cutting(target, init);
  };
  const page = new Agent({ url, threadId, fetch: fetchLogged, reconnect: { baseDelayMs: 20 } });
  if (runId !== "-") page.joinRunId = runId;
  await page.connectAgent(
    {},
    {
      onEvent: ({ event }) => {
        result.events.push(event);
        const parsed = EventSchemas.safeParse(event);
        if (!parsed.success) result.invalid.push({ type: event.type, issues: parsed.error.issues });
      },
      onRunStartedEvent: () => void writeFile(mark, "1"),
    },
  );
  result.messages = page.messages;
  result.ok = warnings.length === 0 && result.invalid.length === 0;
} catch (error) {
  result.ok = false;
  result.error = `${error?.name}: ${error?.message}`;
}
process.stdout.write(JSON.stringify(result) + "\n");
