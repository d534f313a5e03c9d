// An assistant-ui chat on agui-bridge: @assistant-ui/react's primitives, driven
// by @assistant-ui/react-ag-ui's AG-UI runtime over @ag-ui/client's HttpAgent.
//
// - The thread is the server's: its id is in the URL (?thread=...), and a
//   reloaded page reads it back from GET /threads/{id}/state through a history
//   adapter (fromAgUiMessages). The pending approval comes back from the last
//   assistant message's metadata.custom.agui.interrupts, where the runtime
//   looks for it.
// - Stop is assistant-ui's (agent.abortRun()); clients/js/stop.mjs turns it into
//   POST /threads/{id}/runs/{runId}/cancel so the server stops where the page did.
// - Regenerate, edit (branches), an image attachment, reasoning (collapsed).
import { StrictMode, useMemo, useState } from "react";
import { createRoot } from "react-dom/client";
import { HttpAgent } from "@ag-ui/client";
import {
  ActionBarPrimitive,
  AssistantRuntimeProvider,
  AttachmentPrimitive,
  BranchPickerPrimitive,
  ComposerPrimitive,
  MessagePrimitive,
  SimpleImageAttachmentAdapter,
  ThreadPrimitive,
  fromThreadMessageLike,
  useAuiState,
} from "@assistant-ui/react";
import {
  fromAgUiMessages,
  useAgUiInterrupts,
  useAgUiRuntime,
  useAgUiSubmitInterruptResponses,
} from "@assistant-ui/react-ag-ui";
import { cancelOnStop } from "../../../clients/js/stop.mjs";

// Where agui-bridge is served, beside this page (server.py mounts the demo there).
const API = new URL("api", document.baseURI).href;

// The thread in the URL (a reload: the server has it), or a new one put there.
function threadFromUrl() {
  const url = new URL(location.href);
  const id = url.searchParams.get("thread");
  if (id) return { threadId: id, stored: true };
  const fresh = crypto.randomUUID();
  url.searchParams.set("thread", fresh);
  history.replaceState(null, "", url);
  return { threadId: fresh, stored: false };
}

const COMPLETE = { type: "complete", reason: "unknown" };
const ASKING = { type: "requires-action", reason: "interrupt" };

// fromAgUiMessages makes each stored reasoning message an assistant message of
// its own; the live page showed the reasoning inside the answer after it. Put it
// back there, under its own id (the next run resends it as that reasoning message).
function withReasoningInAnswers(likes) {
  const out = [];
  for (const like of likes) {
    const before = out.at(-1);
    const parts = Array.isArray(before?.content) ? before.content : [];
    const reasoningOnly =
      before?.role === "assistant" && parts.length === 1 && parts[0].type === "reasoning";
    if (like.role !== "assistant" || !reasoningOnly) {
      out.push(like);
      continue;
    }
    const agui = { ...parts[0].providerMetadata?.agui, reasoningId: before.id };
    const reasoning = { ...parts[0], providerMetadata: { ...parts[0].providerMetadata, agui } };
    const answer = typeof like.content === "string"
      ? like.content ? [{ type: "text", text: like.content }] : []
      : like.content;
    out[out.length - 1] = { ...like, content: [reasoning, ...answer] };
  }
  return out;
}

// The thread as agui-bridge stored it, as assistant-ui's message repository. A
// message carrying pending interrupts waits for them (requires-action), which is
// how the runtime restores its approval after a reload.
function serverHistory(threadId) {
  return {
    async load() {
      const response = await fetch(`${API}/threads/${encodeURIComponent(threadId)}/state`);
      if (response.status === 404) return { messages: [] };
      if (!response.ok) throw new Error(`loading the thread: HTTP ${response.status}`);
      const { messages, values } = await response.json();
      const items = [];
      let parentId = null;
      for (const like of withReasoningInAnswers(fromAgUiMessages(messages))) {
        const waiting = like.metadata?.custom?.agui?.interrupts?.length > 0;
        const message = fromThreadMessageLike(like, like.id, waiting ? ASKING : COMPLETE);
        items.push({ parentId, message });
        parentId = message.id;
      }
      return { headId: parentId, messages: items, ...(values ? { state: values } : {}) };
    },
    // The server stores every turn of a run itself: nothing to write from here.
    async append() {},
  };
}

function Reasoning({ text }) {
  return (
    <details className="reasoning" data-testid="reasoning">
      <summary>Reasoning</summary>
      <p>{text}</p>
    </details>
  );
}

function Image({ image }) {
  return <img className="part-image" src={image} alt="" />;
}

function Branches() {
  return (
    <BranchPickerPrimitive.Root hideWhenSingleBranch className="branches" data-testid="branches">
      <BranchPickerPrimitive.Previous aria-label="Previous branch">‹</BranchPickerPrimitive.Previous>
      <span>
        <BranchPickerPrimitive.Number /> / <BranchPickerPrimitive.Count />
      </span>
      <BranchPickerPrimitive.Next aria-label="Next branch">›</BranchPickerPrimitive.Next>
    </BranchPickerPrimitive.Root>
  );
}

// A sent attachment: the image itself (what the message carries), and its name.
function MessageAttachment() {
  const attachment = useAuiState((s) => s.attachment);
  const image = attachment.content?.find((part) => part.type === "image")?.image;
  return (
    <AttachmentPrimitive.Root className="attachment" data-testid="attachment">
      {image ? <img src={image} alt={attachment.name} /> : null}
      <AttachmentPrimitive.Name />
    </AttachmentPrimitive.Root>
  );
}

function UserMessage() {
  return (
    <MessagePrimitive.Root className="message user" data-testid="user-message">
      <MessagePrimitive.Attachments>{() => <MessageAttachment />}</MessagePrimitive.Attachments>
      <div className="text">
        <MessagePrimitive.Parts />
      </div>
      <ActionBarPrimitive.Root className="actions">
        <ActionBarPrimitive.Edit>Edit</ActionBarPrimitive.Edit>
      </ActionBarPrimitive.Root>
      <Branches />
    </MessagePrimitive.Root>
  );
}

function EditComposer() {
  return (
    <ComposerPrimitive.Root className="edit" data-testid="edit-composer">
      <ComposerPrimitive.Input aria-label="Edit message" />
      <div className="actions">
        <ComposerPrimitive.Cancel>Cancel</ComposerPrimitive.Cancel>
        <ComposerPrimitive.Send>Save</ComposerPrimitive.Send>
      </div>
    </ComposerPrimitive.Root>
  );
}

function AssistantMessage() {
  return (
    <MessagePrimitive.Root className="message assistant" data-testid="assistant-message">
      <div className="text">
        <MessagePrimitive.Parts components={{ Reasoning, Image }} />
      </div>
      <ActionBarPrimitive.Root className="actions" hideWhenRunning>
        <ActionBarPrimitive.Reload>Regenerate</ActionBarPrimitive.Reload>
      </ActionBarPrimitive.Root>
      <Branches />
    </MessagePrimitive.Root>
  );
}

function Approval() {
  const interrupts = useAgUiInterrupts();
  const respond = useAgUiSubmitInterruptResponses();
  const [busy, setBusy] = useState(false);
  if (interrupts.length === 0) return null;
  const answer = (payload) => {
    setBusy(true);
    respond(interrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload }))).finally(
      () => setBusy(false),
    );
  };
  return (
    <div className="approval" role="group" aria-label="approval">
      {interrupts.map((i) => (
        <p key={i.id}>{i.message ?? i.reason}</p>
      ))}
      <button type="button" disabled={busy} onClick={() => answer("yes")}>
        Approve
      </button>{" "}
      <button type="button" disabled={busy} onClick={() => answer("no")}>
        Decline
      </button>
    </div>
  );
}

function Status() {
  const running = useAuiState((s) => s.thread.isRunning);
  const loading = useAuiState((s) => s.thread.isLoading);
  return <output data-field="running">{loading ? "loading" : running ? "running" : "idle"}</output>;
}

function Composer() {
  return (
    <ComposerPrimitive.Root className="composer">
      <div className="attachments">
        <ComposerPrimitive.Attachments>
          {() => (
            <AttachmentPrimitive.Root className="attachment" data-testid="composer-attachment">
              <AttachmentPrimitive.Name />
            </AttachmentPrimitive.Root>
          )}
        </ComposerPrimitive.Attachments>
      </div>
      <ComposerPrimitive.AddAttachment>Attach</ComposerPrimitive.AddAttachment>
      <ComposerPrimitive.Input aria-label="Message" placeholder="Say something" />
      <ThreadPrimitive.If running={false}>
        <ComposerPrimitive.Send>Send</ComposerPrimitive.Send>
      </ThreadPrimitive.If>
      <ThreadPrimitive.If running>
        <ComposerPrimitive.Cancel>Stop</ComposerPrimitive.Cancel>
      </ThreadPrimitive.If>
    </ComposerPrimitive.Root>
  );
}

// ?stop=abort: assistant-ui's Stop alone (the request aborted, no cancel): the
// server then supersedes the run that lost its reader when the next one comes.
const CANCEL_ON_STOP = new URL(location.href).searchParams.get("stop") !== "abort";

function Chat({ threadId, stored }) {
  const agent = useMemo(() => {
    const agent = new HttpAgent({ url: `${API}/ag-ui/run`, threadId });
    return CANCEL_ON_STOP ? cancelOnStop(agent, { streamsUrl: API }) : agent;
  }, [threadId]);
  const adapters = useMemo(
    () => ({
      ...(stored ? { history: serverHistory(threadId) } : {}),
      attachments: new SimpleImageAttachmentAdapter(),
    }),
    [threadId, stored],
  );
  const runtime = useAgUiRuntime({ agent, adapters });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <main>
        <header>
          <h1>assistant-ui on agui-bridge</h1>
          <Status />
        </header>
        <ThreadPrimitive.Root className="thread">
          <ThreadPrimitive.Viewport className="viewport">
            <ThreadPrimitive.Messages>
              {({ message }) =>
                message.role === "user" ? (
                  message.composer.isEditing ? (
                    <EditComposer />
                  ) : (
                    <UserMessage />
                  )
                ) : (
                  <AssistantMessage />
                )
              }
            </ThreadPrimitive.Messages>
            <Approval />
          </ThreadPrimitive.Viewport>
          <Composer />
        </ThreadPrimitive.Root>
      </main>
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")).render(
  <StrictMode>
    <Chat {...threadFromUrl()} />
  </StrictMode>,
);
