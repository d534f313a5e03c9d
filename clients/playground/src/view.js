// What the page shows: plain DOM, updated in place (a streamed delta changes
// one text node, not the whole conversation).

const $ = (id) => document.getElementById(id);
const TIMELINE_MAX = 2000;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "className") node.className = value;
    else if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child !== undefined && child !== null) node.append(child);
  return node;
}

function text(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((part) => part?.text ?? "").join("");
  return content === undefined || content === null ? "" : JSON.stringify(content);
}

function parses(raw) {
  try {
    JSON.parse(raw);
    return true;
  } catch {
    return false;
  }
}

function pretty(raw) {
  if (typeof raw !== "string") return JSON.stringify(raw, null, 2);
  try {
    return JSON.stringify(JSON.parse(raw), null, 2);
  } catch {
    return raw; // still streaming: not JSON yet
  }
}

function clock(ms) {
  const d = new Date(ms);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

// -- the conversation --------------------------------------------------------

export class Conversation {
  constructor(root) {
    this.root = root;
    this.nodes = new Map(); // message id -> element
    this.calls = new Map(); // tool call id -> {args, result, status}
  }

  render(messages) {
    const results = new Map();
    const callIds = new Set();
    for (const m of messages) {
      if (m.role === "tool") results.set(m.toolCallId, m);
      for (const call of m.toolCalls ?? []) callIds.add(call.id);
    }
    const wanted = [];
    for (const m of messages) {
      if (m.role === "tool" && callIds.has(m.toolCallId)) continue; // shown in its call
      wanted.push(this.#message(m, results));
    }
    // Keep the DOM order the messages' order, moving only what is misplaced.
    let cursor = this.root.firstElementChild;
    for (const node of wanted) {
      if (node !== cursor) this.root.insertBefore(node, cursor);
      else cursor = cursor.nextElementSibling;
    }
    while (cursor) {
      const next = cursor.nextElementSibling;
      cursor.remove();
      cursor = next;
    }
    const scroll = this.root.parentElement;
    scroll.scrollTop = scroll.scrollHeight;
  }

  #message(m, results) {
    if (m.role === "reasoning") return this.#reasoning(m);
    let node = this.nodes.get(m.id);
    if (!node) {
      node = el(
        "article",
        { className: `message ${m.role}`, "data-id": m.id, "data-role": m.role },
        el("header", { text: m.role }),
        el("div", { className: "content" }),
        el("div", { className: "calls" }),
      );
      this.nodes.set(m.id, node);
    }
    const content = node.querySelector(".content");
    const body = text(m.content);
    if (content.textContent !== body) content.textContent = body;
    content.hidden = body === "";
    const calls = node.querySelector(".calls");
    for (const call of m.toolCalls ?? []) this.#call(calls, call, results.get(call.id));
    return node;
  }

  // The model's reasoning (AG-UI 1.0): collapsed by default, open on a click;
  // the summary says whether it is still streaming.
  #reasoning(m) {
    let node = this.nodes.get(m.id);
    if (!node) {
      node = el(
        "details",
        { className: "message reasoning", "data-id": m.id, "data-role": "reasoning" },
        el("summary", { text: "reasoning" }),
        el("div", { className: "content" }),
      );
      this.nodes.set(m.id, node);
    }
    const content = node.querySelector(".content");
    const body = text(m.content);
    if (content.textContent !== body) content.textContent = body;
    const words = body.trim() === "" ? 0 : body.trim().split(/\s+/).length;
    node.querySelector("summary").textContent = `reasoning · ${words} word${words === 1 ? "" : "s"}`;
    return node;
  }

  #call(parent, call, result) {
    let entry = this.calls.get(call.id);
    if (!entry) {
      const args = el("pre", { className: "args" });
      const out = el("pre", { className: "result", hidden: true });
      const status = el("span", { className: "call-status", text: "streaming arguments…" });
      const node = el(
        "div",
        { className: "tool-call", "data-call-id": call.id },
        el("div", { className: "call-head" }, el("b", { text: call.function?.name ?? "tool" }), status),
        el("div", { className: "label", text: "arguments" }),
        args,
        out,
      );
      entry = { node, args, out, status, raw: null, result: null };
      this.calls.set(call.id, entry);
      parent.append(node);
    }
    const raw = call.function?.arguments ?? "";
    if (raw !== entry.raw) {
      entry.raw = raw;
      entry.args.textContent = pretty(raw);
    }
    if (result && result.id !== entry.result) {
      entry.result = result.id;
      entry.out.hidden = false;
      entry.out.textContent = `result: ${pretty(text(result.content))}`;
      const content = text(result.content);
      const failed = parses(content) && JSON.parse(content)?.error !== undefined;
      entry.status.textContent = failed ? "failed" : "done";
      entry.node.classList.toggle("failed", failed);
      entry.node.classList.add("done");
    } else if (!result) {
      entry.status.textContent = raw !== "" && parses(raw) ? "waiting for result…" : "streaming arguments…";
    }
  }

  clear() {
    this.root.replaceChildren();
    this.nodes.clear();
    this.calls.clear();
  }
}

// -- the inspector -----------------------------------------------------------

export function showState(state) {
  const node = $("state");
  const value = JSON.stringify(state ?? {}, null, 2);
  if (node.textContent === value) return;
  node.textContent = value;
  node.classList.remove("flash");
  void node.offsetWidth; // restart the animation
  node.classList.add("flash");
}

export class Steps {
  constructor(root) {
    this.root = root;
    this.open = new Map();
  }

  start(name) {
    const time = el("span", { className: "took", text: "running" });
    const node = el("li", { className: "step running", "data-step": name }, el("b", { text: name }), " ", time);
    this.open.set(name, { node, time, at: performance.now() });
    this.root.append(node);
    this.root.scrollTop = this.root.scrollHeight;
  }

  finish(name) {
    const entry = this.open.get(name);
    if (!entry) return;
    this.open.delete(name);
    entry.node.classList.replace("running", "done");
    entry.time.textContent = `${Math.round(performance.now() - entry.at)} ms`;
  }

  // A run ended: whatever it left open is over.
  end() {
    for (const name of [...this.open.keys()]) this.finish(name);
  }
}

function summary(event) {
  switch (event.type) {
    case "TEXT_MESSAGE_CONTENT":
    case "TOOL_CALL_ARGS":
      return JSON.stringify(event.delta);
    case "TEXT_MESSAGE_START":
    case "TEXT_MESSAGE_END":
    case "REASONING_START":
    case "REASONING_MESSAGE_START":
    case "REASONING_MESSAGE_END":
    case "REASONING_END":
      return event.messageId;
    case "REASONING_MESSAGE_CONTENT":
      return JSON.stringify(event.delta);
    case "REASONING_ENCRYPTED_VALUE":
      return `${event.subtype} ${event.entityId}`;
    case "TOOL_CALL_START":
      return `${event.toolCallName} ${event.toolCallId}`;
    case "TOOL_CALL_END":
      return event.toolCallId;
    case "TOOL_CALL_RESULT":
      return text(event.content).slice(0, 80);
    case "STEP_STARTED":
    case "STEP_FINISHED":
      return event.stepName;
    case "STATE_SNAPSHOT":
      return Object.keys(event.snapshot ?? {}).join(", ");
    case "STATE_DELTA":
      return `${event.delta?.length ?? 0} operation(s)`;
    case "MESSAGES_SNAPSHOT":
      return `${event.messages?.length ?? 0} message(s)`;
    case "RUN_STARTED":
      return event.runId;
    case "RUN_FINISHED":
      return event.outcome?.type ?? "success";
    case "RUN_ERROR":
      return `${event.code ?? ""} ${event.message ?? ""}`.trim();
    case "CUSTOM":
      return event.name;
    default:
      return "";
  }
}

export class Timeline {
  constructor(root) {
    this.root = root;
    this.origin = null;
    // Follows new events unless the reader scrolled up to look at older ones.
    this.follow = true;
    const box = root.parentElement;
    box.addEventListener("scroll", () => {
      this.follow = box.scrollHeight - box.scrollTop - box.clientHeight < 40;
    });
  }

  add(event) {
    const now = performance.now();
    if (event.type === "RUN_STARTED" || this.origin === null) this.origin = now;
    const details = el(
      "details",
      { className: `event ${event.type.toLowerCase()}`, "data-type": event.type },
      el(
        "summary",
        {},
        el("time", { text: clock(Date.now()), title: "wall clock" }),
        el("span", { className: "since", text: `+${Math.round(now - this.origin)} ms`, title: "since RUN_STARTED" }),
        el("b", { text: event.type }),
        el("span", { className: "what", text: summary(event) }),
      ),
    );
    details.addEventListener("toggle", () => {
      if (details.open && details.childElementCount === 1) details.append(el("pre", { text: JSON.stringify(event, null, 2) }));
    }, { once: false });
    const li = el("li", {}, details);
    this.root.append(li);
    while (this.root.childElementCount > TIMELINE_MAX) this.root.firstElementChild.remove();
    const box = this.root.parentElement;
    if (this.follow) box.scrollTop = box.scrollHeight;
  }

  clear() {
    this.root.replaceChildren();
    this.origin = null;
  }
}

// -- status, badge, interrupts, threads ---------------------------------------

export function status(kind, label) {
  const node = $("run-status");
  node.dataset.kind = kind;
  node.textContent = label;
}

export class Badge {
  constructor(node) {
    this.node = node;
    this.count = 0;
    this.failed = null;
    this.#show();
  }

  accepted() {
    this.count += 1;
    if (this.count % 16 === 1 || this.count < 16) this.#show();
    else queueMicrotask(() => this.#show());
  }

  rejected(error) {
    this.failed = error?.message ?? String(error);
    this.#show();
  }

  #show() {
    const node = this.node;
    if (this.failed) {
      node.dataset.state = "failed";
      node.textContent = "✗ verifier rejected an event";
      node.title = this.failed;
    } else if (this.count === 0) {
      node.dataset.state = "idle";
      node.textContent = "verifier: no events yet";
      node.title = "@ag-ui/client's verifyEvents checks every event this page receives";
    } else {
      node.dataset.state = "ok";
      node.textContent = `✓ verifier: ${this.count} events accepted`;
      node.title = "@ag-ui/client's verifyEvents accepted every event this page received";
    }
  }
}

export function showError(message) {
  const node = $("error");
  node.hidden = !message;
  node.textContent = message ?? "";
}

// Something the user should know that is not a failure.
export function showNotice(message) {
  const node = $("notice");
  node.hidden = !message;
  node.textContent = message ?? "";
}

// interrupts: [{interrupt, choices, free}]; answer(interrupt, choice) is called on a click.
export function showInterrupts(items, answer) {
  const root = $("interrupts");
  root.replaceChildren();
  root.hidden = items.length === 0;
  for (const { interrupt, choices, free } of items) {
    const buttons = el("div", { className: "choices" });
    let input;
    if (free) {
      input = el("input", { type: "text", placeholder: "your answer", "aria-label": "your answer" });
      const send = el("button", { type: "button", className: "approve", text: "Send answer" });
      send.addEventListener("click", () => answer(interrupt, { payload: input.value, status: "resolved" }));
      buttons.append(input, send);
    }
    for (const choice of choices) {
      const button = el("button", {
        type: "button",
        className: choice.kind,
        "data-choice": choice.status === "cancelled" ? "cancel" : String(choice.payload),
        text: choice.label,
      });
      button.addEventListener("click", () => answer(interrupt, choice));
      buttons.append(button);
    }
    root.append(
      el(
        "div",
        { className: "interrupt", "data-interrupt-id": interrupt.id },
        el("div", { className: "reason", text: interrupt.reason ?? "input required" }),
        el("p", { className: "question", text: interrupt.message ?? "The agent is waiting for you." }),
        interrupt.responseSchema
          ? el("pre", { className: "schema", text: `responseSchema ${JSON.stringify(interrupt.responseSchema)}` })
          : null,
        buttons,
      ),
    );
  }
  // The panel took room from the conversation: keep its end in view.
  const scroll = $("scroll");
  scroll.scrollTop = scroll.scrollHeight;
}

export function showThreads(threads, current, linkTo) {
  const root = $("thread-list");
  root.replaceChildren();
  for (const t of threads) {
    const link = el("a", { href: linkTo(t), title: t.id }, el("span", { className: "title", text: t.title || t.id }));
    const when = new Date(t.updated).toLocaleString();
    link.append(el("small", { text: [t.agent, when].filter(Boolean).join(" · ") }));
    if (t.status && t.status !== "idle") link.append(el("small", { className: `thread-status ${t.status}`, text: t.status }));
    root.append(el("li", { className: t.id === current ? "current" : null, "data-thread-id": t.id, "data-status": t.status }, link));
  }
  if (threads.length === 0) root.append(el("li", { className: "empty", text: "No threads yet: send a message." }));
}
