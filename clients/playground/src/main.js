// The playground: one agent of the app, one thread, through the real
// @ag-ui/client (its verifier sees every event) and the reconnecting agent of
// clients/js (join a thread's live run, resume a cut stream by id).
import { HttpAgent } from "@ag-ui/client";
import { Observable } from "rxjs";
import { withReconnect } from "../../js/reconnect.mjs";
import * as api from "./api.js";
import { choicesFor } from "./interrupts.js";
import * as threads from "./threads.js";
import { Badge, Conversation, Steps, Timeline, showError, showInterrupts, showNotice, showState, showThreads, status } from "./view.js";

const Agent = withReconnect(HttpAgent, Observable);
const $ = (id) => document.getElementById(id);
const uid = () => crypto.randomUUID();
const ids = (items) => items.map((item) => item.id).join("\n");
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
// How often an idle page asks whether someone else started a run on its thread.
const WATCH_EVERY_MS = 1000;
// How often a page in view asks the thread list again (other tabs and clients
// start and end runs); also when the page is shown or focused again.
const LIST_EVERY_MS = 5000;
const THREADS_SHOWN = 30;

const page = {
  agentInfo: null,
  agent: null,
  threadId: null,
  saved: false, // the thread is in the URL and the list (it has a turn)
  runId: null, // the live run this page shows (its own or watched)
  mine: false, // the live run is this page's own
  pending: [], // the interrupts the thread waits on
  watcher: null,
};

const view = {
  conversation: new Conversation($("messages")),
  steps: new Steps($("steps")),
  timeline: new Timeline($("timeline")),
  badge: new Badge($("verifier")),
};

function linkTo(thread) {
  const params = new URLSearchParams({ agent: thread.agent ?? page.agentInfo.id, thread: thread.id });
  return `?${params}`;
}

function remember(fields = {}) {
  threads.touch(page.threadId, { agent: page.agentInfo.id, ...fields });
  if (!page.saved) {
    page.saved = true;
    history.replaceState(null, "", linkTo({ id: page.threadId, agent: page.agentInfo.id }));
  }
}

// The thread list from the server; this browser's own list if that fails.
let listing = 0;
async function listThreads() {
  const asked = ++listing;
  let shown;
  try {
    shown = threads.merged(await api.searchThreads(THREADS_SHOWN));
  } catch {
    shown = threads.list();
  }
  if (asked === listing) showThreads(shown, page.threadId, linkTo); // not an older answer over a newer
}

function listedWhileSeen() {
  const again = () => {
    if (!document.hidden) listThreads();
  };
  setInterval(again, LIST_EVERY_MS);
  document.addEventListener("visibilitychange", again);
  window.addEventListener("focus", again);
}

function setLive(runId, mine) {
  page.runId = runId;
  page.mine = mine;
  const idle = runId === null;
  $("stop").disabled = idle;
  $("send").disabled = !idle;
  document.body.dataset.run = idle ? "idle" : mine ? "running" : "watching";
  if (idle) status(page.pending.length ? "interrupted" : "idle", page.pending.length ? "waiting for your answer" : "idle");
  else status(mine ? "running" : "watching", `${mine ? "running" : "watching live run"} ${runId.slice(0, 12)}`);
}

function setPending(interrupts) {
  if (ids(interrupts) === ids(page.pending)) return;
  page.pending = interrupts;
  showPending();
  if (page.runId === null) setLive(null, false);
}

function showPending() {
  showInterrupts(
    page.pending.map((interrupt) => ({ interrupt, ...choicesFor(interrupt) })),
    answer,
  );
}

function subscriber() {
  return {
    onEvent: ({ event }) => {
      // The client applies an event only after its verifier accepted it.
      view.badge.accepted();
      view.timeline.add(event);
    },
    onMessagesChanged: ({ messages }) => view.conversation.render(messages),
    onStateChanged: ({ state }) => showState(state),
    onStepStartedEvent: ({ event }) => view.steps.start(event.stepName),
    onStepFinishedEvent: ({ event }) => view.steps.finish(event.stepName),
    onRunStartedEvent: ({ event }) => {
      showError(null);
      showNotice(null); // the thread is on the server now
      setLive(event.runId, page.mine);
      listThreads(); // the thread is stored (and busy) once its run started
    },
    onRunFinishedEvent: ({ outcome, interrupts }) => {
      view.steps.end();
      page.pending = outcome === "interrupt" ? interrupts : [];
      threads.touch(page.threadId, { pending: page.pending });
      showPending();
      if (outcome === "cancelled") status("stopped", "stopped");
    },
    onRunErrorEvent: ({ event }) => {
      view.steps.end();
      showError(`The run failed: ${event.message ?? event.code ?? "RUN_ERROR"}`);
    },
    onRunFailed: ({ error }) => {
      if (error?.name === "AGUIError") view.badge.rejected(error);
      showError(String(error?.message ?? error));
    },
  };
}

// -- the thread's live runs: joined while this page is idle --------------------

function watch() {
  const watcher = { stopped: false, controller: null };
  watcher.done = (async () => {
    while (!watcher.stopped) {
      let joined = false;
      // A join is a GET: the client's interrupt check (for a new run) does not apply.
      page.agent.pendingInterrupts = [];
      page.agent.abortController = watcher.controller = new AbortController();
      try {
        await page.agent.connectAgent({}, { onRunStartedEvent: () => void (joined = true) });
      } catch (error) {
        if (!watcher.stopped) showError(`Watching the thread failed: ${error?.message ?? error}`);
      }
      if (joined && !watcher.stopped) {
        setLive(null, false);
        listThreads();
      }
      if (watcher.stopped) break;
      if (!joined) {
        // A run shorter than the wait between joins is not missed: it is in the
        // stored thread.
        if (page.saved && !watcher.stopped) await restore({ onlyIfChanged: true }).catch(() => {});
        await sleep(WATCH_EVERY_MS);
      }
    }
  })();
  page.watcher = watcher;
}

async function unwatch() {
  const watcher = page.watcher;
  if (!watcher) return;
  page.watcher = null;
  watcher.stopped = true;
  watcher.controller?.abort();
  await watcher.done;
}

// -- this page's runs --------------------------------------------------------

async function run(params, pendingInterrupts = []) {
  const runId = uid();
  page.mine = true;
  setLive(runId, true); // at once: the page is busy from the click on
  $("stop").disabled = true; // until the server has the run (RUN_STARTED)
  await unwatch();
  page.agent.pendingInterrupts = pendingInterrupts;
  try {
    await page.agent.runAgent({ runId, ...params });
  } catch (error) {
    if (error?.name !== "AbortError") showError(String(error?.message ?? error));
  } finally {
    page.mine = false;
    setLive(null, false);
    watch();
    listThreads();
  }
}

async function send(content) {
  if (page.pending.length) {
    showError("Answer the interrupt first (the buttons above).");
    return;
  }
  remember({ title: threads.find(page.threadId)?.title ?? content.slice(0, 60) });
  page.agent.addMessage({ id: uid(), role: "user", content });
  view.conversation.render(page.agent.messages);
  await run({});
}

async function answer(interrupt, choice) {
  const entries = page.pending.map((pending) =>
    pending.id === interrupt.id
      ? { interruptId: pending.id, status: choice.status, ...(choice.status === "resolved" ? { payload: choice.payload } : {}) }
      : { interruptId: pending.id, status: "cancelled" },
  );
  const pending = page.pending;
  page.pending = [];
  showPending();
  remember({ pending: [] });
  await run({ resume: entries }, pending);
}

async function stop() {
  if (!page.runId) return;
  $("stop").disabled = true;
  status("stopping", "stopping…");
  try {
    // A run that had already ended answers with its own status: nothing was
    // stopped, and its end is on its way to this page like any run's.
    await api.cancel(page.threadId, page.runId);
  } catch (error) {
    // A run that ended is no failure (a server answering AG-UI's way says 409).
    if (error.code !== "run_ended") showError(`Stop failed: ${error.message}`);
  }
}

// -- start -------------------------------------------------------------------

// An AG-UI interrupt from a stored one: LangGraph's {id, value: {...}} or AG-UI's own.
function asInterrupt(entry) {
  const value = entry?.value;
  if (value && typeof value === "object" && !Array.isArray(value) && entry.reason === undefined) {
    return { id: entry.id, ...value };
  }
  return entry;
}

// The thread in the URL is not on the server (never run, deleted, or a server
// restarted on a memory store): said plainly; the first message starts it.
function missing() {
  page.saved = false; // nothing to ask again
  showNotice(
    `Thread ${page.threadId} is not on the server (not started yet, deleted, or the server ` +
      "lost it): your first message starts it under this id.",
  );
}

async function restore({ onlyIfChanged = false } = {}) {
  // Asked with a search first when the page opens a thread: reading the state
  // of a thread the server does not have is a failed request (404) in the
  // browser's console. The watcher's looks after that read the state only (a
  // thread deleted while its page is open: one 404, then the notice).
  const known = onlyIfChanged || (await api.threadExists(page.threadId));
  const stored = known ? await api.threadState(page.threadId) : null;
  if (page.runId !== null || page.watcher?.stopped) return; // a run began meanwhile
  if (stored === null) {
    missing();
    return;
  }
  showNotice(null);
  // The state route may carry the pending interrupts (Agent Protocol's
  // ThreadState: {id, value}); else what this browser saw.
  const pending = Array.isArray(stored.interrupts)
    ? stored.interrupts.map(asInterrupt)
    : (threads.find(page.threadId)?.pending ?? []);
  if (onlyIfChanged && ids(stored.messages ?? []) === ids(page.agent.messages)) {
    setPending(pending);
    return;
  }
  page.agent.setMessages(stored.messages ?? []);
  page.agent.setState(stored.values ?? {});
  view.conversation.render(page.agent.messages);
  showState(page.agent.state);
  setPending(pending);
}

async function main() {
  const params = new URLSearchParams(location.search);
  let agents;
  try {
    agents = await api.agents();
  } catch (error) {
    showError(`Could not list the agents: ${error.message}`);
    return;
  }
  if (!agents.length) {
    showError("This app has no agents.");
    return;
  }
  const select = $("agent");
  for (const a of agents) select.append(new Option(`${a.id} (${a.dialect})`, a.id));
  page.agentInfo = agents.find((a) => a.id === params.get("agent")) ?? agents[0];
  select.value = page.agentInfo.id;
  select.addEventListener("change", () => {
    location.search = `?${new URLSearchParams({ agent: select.value })}`;
  });
  $("agent-path").textContent = page.agentInfo.paths[0];

  page.threadId = params.get("thread") ?? uid();
  page.saved = params.has("thread");
  $("thread-id").textContent = page.threadId;
  page.agent = new Agent({ url: api.url(page.agentInfo.paths[0]), threadId: page.threadId, streamsUrl: api.streamsUrl });
  page.agent.subscribe(subscriber());
  listThreads();
  listedWhileSeen();

  $("composer").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("input");
    const content = input.value.trim();
    if (!content || page.runId) return;
    input.value = "";
    send(content);
  });
  $("input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("stop").addEventListener("click", stop);
  $("new-thread").addEventListener("click", () => {
    location.search = `?${new URLSearchParams({ agent: page.agentInfo.id })}`;
  });
  $("clear-events").addEventListener("click", () => view.timeline.clear());

  if (page.saved) {
    try {
      await restore();
    } catch (error) {
      showError(`Could not load the thread: ${error.message}`);
    }
  }
  setLive(null, false);
  document.body.dataset.ready = "true";
  watch();
}

main();
