// The page: a CopilotChat on the runtime route, the agent's shared state
// (useAgent) beside it, and the demo's approval as buttons (useInterrupt).
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import {
  CopilotChat,
  CopilotKitProvider,
  UseAgentUpdate,
  useAgent,
  useInterrupt,
  useRenderTool,
} from "@copilotkit/react-core/v2";
import { z } from "zod";
import "./app.css";

// The thread lives in the URL, so a reload reconnects to it (CopilotChat's
// connectAgent) and a link shares it.
function threadFromUrl() {
  const url = new URL(window.location.href);
  let thread = url.searchParams.get("thread");
  if (!thread) {
    thread = crypto.randomUUID();
    url.searchParams.set("thread", thread);
    window.history.replaceState(null, "", url);
  }
  return thread;
}

// The demo suspends on "approve ..." with an interrupt whose responseSchema is
// "yes" | "no"; the buttons resume the interrupted run with that answer.
function Approval() {
  useInterrupt({
    render: ({ interrupt, resolve }) => (
      <div className="approval" role="group" aria-label="approval">
        <p>{interrupt?.message ?? "The agent asks for your approval."}</p>
        <button type="button" onClick={() => resolve("yes")}>
          Approve
        </button>
        <button type="button" className="secondary" onClick={() => resolve("no")}>
          Decline
        </button>
      </div>
    ),
  });
  return null;
}

// The demo's calculator runs on the agent's side; the chat shows the call as
// its arguments stream, then its result (a JSON string).
const CALCULATE = z.object({ expression: z.string() });

function CalculatorCalls() {
  useRenderTool(
    {
      name: "calculate",
      parameters: CALCULATE,
      render: ({ status, parameters, result }) => {
        const expression = parameters?.expression ?? "…";
        let value = "…";
        if (status === "complete") {
          try {
            value = JSON.parse(result).value ?? result;
          } catch {
            value = result;
          }
        }
        return (
          <div className="tool-call" data-status={status}>
            <span className="tool-name">calculate</span> <code>{expression}</code> → <strong>{String(value)}</strong>
          </div>
        );
      },
    },
    [],
  );
  return null;
}

// Streamdown (CopilotChat's markdown) closes what it takes for unfinished
// markdown even in a finished message: "6 * 7 = 42." would show as "6 * 7 = 42.*".
const MESSAGE_VIEW = { assistantMessage: { markdownRenderer: { parseIncompleteMarkdown: false } } };

const STATE_UPDATES = [UseAgentUpdate.OnStateChanged, UseAgentUpdate.OnRunStatusChanged];

function AgentState() {
  const { agent } = useAgent({ updates: STATE_UPDATES });
  const { loop, task } = agent.state ?? {};
  return (
    <aside className="state" aria-label="agent state">
      <h2>Shared state</h2>
      <dl>
        <dt>run</dt>
        <dd data-field="running">{agent.isRunning ? "running" : "idle"}</dd>
        <dt>turn</dt>
        <dd data-field="turn">{loop?.iteration ?? "-"}</dd>
        <dt>task</dt>
        <dd data-field="task">{task ? `${task.name ?? task.taskId ?? "task"}: ${task.status}` : "-"}</dd>
      </dl>
      <p className="hint">
        Try <code>what is 6 * 7?</code> or <code>approve deleting the draft</code>.
      </p>
    </aside>
  );
}

function App() {
  const thread = threadFromUrl();
  return (
    <CopilotKitProvider runtimeUrl="/api/copilotkit" enableInspector={false}>
      <Approval />
      <CalculatorCalls />
      <main className="layout">
        <CopilotChat
          threadId={thread}
          className="chat"
          labels={{ chatInputPlaceholder: "Message the demo agent" }}
          messageView={MESSAGE_VIEW}
        />
        <AgentState />
      </main>
    </CopilotKitProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
