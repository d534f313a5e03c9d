// Turns a client's Stop into POST /threads/{threadId}/runs/{runId}/cancel, so
// the run stops on the server where the page stopped (its partial answer kept,
// RUN_FINISHED with the cancelled outcome for a 1.0 client) instead of going
// on to store an answer the page never showed.
//
//   import { cancelOnStop } from "agui-bridge-client/stop";
//   const agent = cancelOnStop(new HttpAgent({ url: "/ag-ui/run" }));
//
// assistant-ui's AG-UI runtime and CopilotKit both stop a run with
// agent.abortRun(): this wraps that method of the one agent given (the request
// is still aborted), and it returns the cancel request's promise (resolved
// with its Response; never rejected: a stop must not throw). Options:
// `streamsUrl` (where /threads/... is served; default: the origin of the
// agent's url), `fetch`.

export function cancelOnStop(agent, { streamsUrl, fetch: doFetch } = {}) {
  const origin = () => new URL(agent.url, globalThis.location?.href ?? "http://localhost").origin;
  const base = () => (streamsUrl ?? origin()).replace(/\/$/, "");
  let runId;
  agent.subscribe({
    onRunStartedEvent: ({ event }) => {
      runId = event.runId;
    },
    onRunFinishedEvent: () => {
      runId = undefined;
    },
    onRunErrorEvent: () => {
      runId = undefined;
    },
  });
  const abort = agent.abortRun.bind(agent);
  agent.abortRun = () => {
    const stopped = runId;
    runId = undefined;
    abort();
    if (stopped === undefined) return Promise.resolve(undefined);
    const url = `${base()}/threads/${encodeURIComponent(agent.threadId)}/runs/${encodeURIComponent(stopped)}/cancel`;
    const send = doFetch ?? ((input, init) => fetch(input, init));
    return send(url, { method: "POST", headers: { ...(agent.headers ?? {}) } }).catch(() => undefined);
  };
  return agent;
}
