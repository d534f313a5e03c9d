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
    throw Object.assign(new Error(`HTTP ${response.status}: ${message}`), { status: response.status });
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

export async function cancel(threadId, runId) {
  const path = `threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/cancel`;
  return json(await fetch(url(path), { method: "POST" }));
}

// The app's threads the caller may see, newest first (Agent Protocol's search).
export async function searchThreads(limit) {
  const response = await fetch(url("threads/search"), {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json" },
    body: JSON.stringify({ limit }),
  });
  return json(response);
}
