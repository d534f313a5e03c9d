// The threads this browser opened, newest first (the server lists none: a
// thread is private to whoever knows its id).

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
