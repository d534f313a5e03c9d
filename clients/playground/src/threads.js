// The thread list: the app's threads (POST /threads/search), with what this
// browser remembers of them (the agent, a title, a pending interrupt).

const KEY = "agui-bridge.playground.threads";
const MAX = 50;

export function list() {
  try {
    const value = JSON.parse(localStorage.getItem(KEY) ?? "[]");
    return Array.isArray(value) ? value : [];
  } catch {
    return [];
  }
}

export function find(threadId) {
  return list().find((t) => t.id === threadId);
}

// Records the thread (moved to the top), merging `fields` into what is kept.
export function touch(threadId, fields) {
  const known = list();
  const previous = known.find((t) => t.id === threadId) ?? { id: threadId };
  const entry = { ...previous, ...fields, updated: Date.now() };
  const rest = known.filter((t) => t.id !== threadId);
  localStorage.setItem(KEY, JSON.stringify([entry, ...rest].slice(0, MAX)));
  return entry;
}

function titleOf(found) {
  const messages = found.values?.messages ?? [];
  const first = messages.find((m) => m.type === "human" || m.role === "user");
  const content = first?.content;
  if (typeof content === "string") return content.slice(0, 60);
  if (Array.isArray(content)) return content.map((p) => p?.text ?? "").join("").slice(0, 60);
  return "";
}

// The server's threads (Agent Protocol ThreadState-like records), newest first.
export function merged(found) {
  const local = new Map(list().map((t) => [t.id, t]));
  return found
    .map((t) => {
      const known = local.get(t.thread_id) ?? {};
      return {
        id: t.thread_id,
        agent: known.agent,
        title: known.title || titleOf(t),
        updated: Date.parse(t.updated_at) || known.updated || 0,
        status: t.status,
      };
    })
    .sort((a, b) => b.updated - a.updated);
}
