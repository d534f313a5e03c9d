// The server's routes, relative to where the app is mounted (the page tells:
// <meta name="agui-base">), so the playground works under any mount path.

export const base = new URL(document.querySelector('meta[name="agui-base"]')?.content ?? "./", location.href);

export const url = (path) => new URL(path.replace(/^\//, ""), base).toString();

// Where /threads/... is served (reconnect.mjs appends the path to it).
export const streamsUrl = url("").replace(/\/$/, "");

async function json(response) {
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const message = body?.error?.message ?? response.statusText;
    const error = new Error(`HTTP ${response.status}: ${message}`);
    throw Object.assign(error, { status: response.status, code: body?.error?.code });
  }
  return body;
}

export async function agents() {
  return (await json(await fetch(url("agents"), { headers: { Accept: "application/json" } }))).agents;
}

export async function threadState(threadId) {
  const response = await fetch(url(`threads/${encodeURIComponent(threadId)}/state`), {
    headers: { Accept: "application/json" },
  });
  if (response.status === 404) return null;
  return json(response);
}

// Stops a run, asked the Agent Protocol's way (`action=interrupt`, as the
// LangGraph SDKs send it): a run that already ended is then no error (202 with
// its own status, not 409 run_ended), as a Stop that raced the run's end is none.
export async function cancel(threadId, runId) {
  const path = `threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/cancel`;
  return json(await fetch(url(`${path}?action=interrupt`), { method: "POST" }));
}

async function search(body) {
  const response = await fetch(url("threads/search"), {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify(body),
  });
  return json(response);
}

// The app's threads the caller may see, newest first (Agent Protocol's search).
export async function searchThreads(limit) {
  return search({ limit });
}

// Whether the server has the thread (for this caller): a search answers a list,
// where reading a thread it does not have would be a failed request (404).
export async function threadExists(threadId) {
  const found = await search({ ids: [threadId], limit: 1 });
  return found.some((t) => t.thread_id === threadId);
}
