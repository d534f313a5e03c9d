// A reconnecting HttpAgent for agui-bridge run streams (no imports: the
// client's HttpAgent and rxjs's Observable are passed in, so one file serves
// every @ag-ui/client version; index.mjs binds them for a bundler).
//
//   const ReconnectingHttpAgent = withReconnect(HttpAgent, Observable);
//   const agent = new ReconnectingHttpAgent({ url: "/ag-ui/run", threadId });
//   await agent.connectAgent();   // joins the thread's active run, if any
//   await agent.runAgent();       // a run whose stream is cut resumes by id
//   await agent.getCapabilities(); // the agent's AG-UI AgentCapabilities
//
// Options beside HttpAgent's: `streamsUrl` (where /threads/... is served;
// default: the origin of `url`), `reconnect: {retries, baseDelayMs,
// maxDelayMs}` (retries in a row without progress; progress resets them).
//
// Why a subclass: @ag-ui/client's connect() throws, its SSE parser ignores
// `id:` and it never sends Last-Event-ID. This agent parses the frames itself,
// remembers the last id, and when a stream ends without RUN_FINISHED or
// RUN_ERROR it asks GET /threads/{t}/runs/{r}/events with that id. The
// client's verifier saw the run start, so what the server re-sends to make a
// stream valid on its own (RUN_STARTED, re-opening STARTs) is dropped here:
// on an exact resume ("agui-resume: exact") every frame without a newer id;
// on a snapshot resume the snapshots pass and the opens are reconciled (what
// closed during the gap is closed, what is open and unknown is opened). An
// abort stays an abort: nothing is retried.

const TERMINAL = new Set(["RUN_FINISHED", "RUN_ERROR"]);
// Reasoning (AG-UI 1.0) has two brackets under one id: the message ("rm")
// inside the span ("rs"); the verifier tracks them apart, so do we.
const OPEN = {
  TEXT_MESSAGE_START: ["t", "messageId"],
  TOOL_CALL_START: ["c", "toolCallId"],
  STEP_STARTED: ["s", "stepName"],
  REASONING_START: ["rs", "messageId"],
  REASONING_MESSAGE_START: ["rm", "messageId"],
};
const CLOSE = {
  TEXT_MESSAGE_END: ["t", "messageId"],
  TOOL_CALL_END: ["c", "toolCallId"],
  STEP_FINISHED: ["s", "stepName"],
  REASONING_END: ["rs", "messageId"],
  REASONING_MESSAGE_END: ["rm", "messageId"],
};
const END_OF = {
  t: (id) => ({ type: "TEXT_MESSAGE_END", messageId: id }),
  c: (id) => ({ type: "TOOL_CALL_END", toolCallId: id }),
  s: (id) => ({ type: "STEP_FINISHED", stepName: id }),
  rs: (id) => ({ type: "REASONING_END", messageId: id }),
  rm: (id) => ({ type: "REASONING_MESSAGE_END", messageId: id }),
};

async function* sseFrames(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const raw = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const frame = {};
        for (const line of raw.split("\n")) {
          if (line.startsWith("id:")) frame.id = Number(line.slice(3).trim());
          else if (line.startsWith("data:")) {
            const value = line.slice(line[5] === " " ? 6 : 5);
            frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
          }
        }
        if (frame.data !== undefined || frame.id !== undefined) yield frame;
      }
    }
  } finally {
    reader.releaseLock?.();
  }
}

function isAbort(error, signal) {
  return signal?.aborted || error?.name === "AbortError";
}

export function withReconnect(HttpAgent, Observable) {
  return class ReconnectingHttpAgent extends HttpAgent {
    constructor(config = {}) {
      super(config);
      this.streamsUrl = (config.streamsUrl ?? new URL(config.url, "http://localhost").origin).replace(/\/$/, "");
      this.reconnect = { retries: 5, baseDelayMs: 200, maxDelayMs: 5000, ...(config.reconnect ?? {}) };
      this.lastEventId = undefined;
    }

    // GET {agent url}/capabilities: what the server does for this agent (AG-UI
    // 1.0 AgentCapabilities: streaming, resumable, interrupts, reasoning, ...).
    async getCapabilities() {
      const [path, query] = this.url.split("?", 2);
      const url = `${path.replace(/\/$/, "")}/capabilities${query === undefined ? "" : `?${query}`}`;
      const response = await this.fetch(url, { method: "GET", headers: { ...this.headers, Accept: "application/json" } });
      if (!response.ok) {
        const text = await response.text().catch(() => "");
        throw new Error(`HTTP ${response.status}: ${text}`);
      }
      return response.json();
    }

    run(input) {
      return this.#stream(() => this.fetch(this.url, this.requestInit(input)), input.runId);
    }

    // The thread's active run, joined: the server's prelude, then the live tail
    // (nothing when the thread has no active run). With `joinRunId` set, that
    // run's stream instead, live or finished within the server's retention.
    connect(input) {
      const thread = encodeURIComponent(input.threadId);
      const url = this.joinRunId
        ? `${this.streamsUrl}/threads/${thread}/runs/${encodeURIComponent(this.joinRunId)}/events`
        : `${this.streamsUrl}/threads/${thread}/events`;
      return this.#stream(() => this.fetch(url, this.#getInit()), this.joinRunId);
    }

    // The AG-UI version this client's runs declare (RunAgentInput.protocolVersion;
    // none before 1.0): a reader that declares none reads a run a 1.0 client
    // started as a 0.0.x run gives it, what a 0.0.x client's schema takes.
    #protocolVersion() {
      return this.prepareRunAgentInput?.({}).protocolVersion;
    }

    #getInit(lastId) {
      const headers = { ...this.headers, Accept: "text/event-stream" };
      const declared = this.#protocolVersion();
      if (declared !== undefined) headers["agui-protocol-version"] = declared;
      if (lastId !== undefined) headers["Last-Event-ID"] = String(lastId);
      return { method: "GET", headers, signal: this.abortController.signal };
    }

    #stream(first, runId) {
      return new Observable((subscriber) => {
        let stopped = false;
        const signal = this.abortController.signal;
        const open = new Map(); // key -> [kind, id] of what the verifier has open
        let lastId;
        let terminal = false;
        let currentRun = runId;

        const pass = (event) => {
          const opens = OPEN[event.type];
          const closes = CLOSE[event.type];
          if (opens) open.set(`${opens[0]}:${event[opens[1]]}`, [opens[0], event[opens[1]]]);
          if (closes) open.delete(`${closes[0]}:${event[closes[1]]}`);
          if (TERMINAL.has(event.type)) terminal = true;
          subscriber.next(event);
        };

        const loop = async () => {
          let request = first;
          let resumed = false;
          let failures = 0;
          for (;;) {
            let progressed = false;
            let failure;
            try {
              const response = await request();
              if (response.status === 204 && !resumed) return subscriber.complete();
              if (!response.ok) {
                const text = await response.text().catch(() => "");
                throw Object.assign(new Error(`HTTP ${response.status}: ${text}`), { fatal: true });
              }
              const mode = resumed ? response.headers.get("agui-resume") : null;
              const reopened = new Map();
              let inPrelude = resumed;
              for await (const frame of sseFrames(response.body)) {
                if (stopped) return;
                const event = frame.data === undefined ? null : JSON.parse(frame.data);
                if (inPrelude) {
                  // What the server re-sends so a stream stands alone; its
                  // last frame carries the id of the last event it covers.
                  if (event && mode === "snapshot") {
                    const opens = OPEN[event.type];
                    if (opens) reopened.set(`${opens[0]}:${event[opens[1]]}`, event);
                    else if (event.type !== "RUN_STARTED") pass(event);
                  }
                  if (frame.id !== undefined) {
                    inPrelude = false;
                    lastId = frame.id;
                    if (mode === "snapshot") reconcile(reopened);
                  }
                  continue;
                }
                if (frame.id !== undefined) lastId = frame.id;
                this.lastEventId = lastId;
                if (!event) continue;
                if (event.type === "RUN_STARTED") currentRun = event.runId;
                progressed = true;
                pass(event);
              }
              if (inPrelude && mode === "snapshot") reconcile(reopened);
            } catch (error) {
              if (stopped) return;
              if (isAbort(error, signal) || error?.fatal) return subscriber.error(error);
              failure = error;
            }
            if (terminal) return subscriber.complete();
            failures = progressed ? 0 : failures + 1;
            if (currentRun === undefined || failures > this.reconnect.retries) {
              return subscriber.error(failure ?? new Error("the run's stream ended without a terminal event"));
            }
            const delay = Math.min(this.reconnect.maxDelayMs, this.reconnect.baseDelayMs * 2 ** Math.max(0, failures - 1));
            await new Promise((resolve) => setTimeout(resolve, delay * (0.5 + Math.random() / 2)));
            if (stopped || signal.aborted) return;
            const url = `${this.streamsUrl}/threads/${encodeURIComponent(this.threadId)}/runs/${encodeURIComponent(currentRun)}/events`;
            request = () => this.fetch(url, this.#getInit(lastId));
            resumed = true;
          }
        };

        // After a gap the snapshot says what is open now: close what closed
        // meanwhile, open what opened meanwhile.
        const reconcile = (reopened) => {
          for (const [key, [kind, id]] of [...open]) if (!reopened.has(key)) pass(END_OF[kind](id));
          for (const [key, event] of reopened) if (!open.has(key)) pass(event);
        };

        loop().catch((error) => subscriber.error(error));
        return () => {
          stopped = true;
        };
      });
    }
  };
}
