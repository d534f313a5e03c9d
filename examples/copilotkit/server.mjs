// The example's one process: the built page and the CopilotKit runtime route.
//
//   AGUI_BRIDGE_URL=http://127.0.0.1:8000/ag-ui/run PORT=3000 node server.mjs
//
// browser -> /api/copilotkit (CopilotRuntime v2, no API key here) -> HttpAgent
// -> agui-bridge. The runtime registers the agent under "default", the id the
// React hooks (CopilotChat, useAgent, useInterrupt) bind to when given none.
// PORT=0 takes a free port; the first stdout line is {"url": ...} once it listens.

import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

// Nothing leaves the machine unless asked: the runtime's telemetry is off by
// default (read when the runtime loads, so set before the imports below).
process.env.COPILOTKIT_TELEMETRY_DISABLED ??= "true";
process.env.DO_NOT_TRACK ??= "1";

const { HttpAgent } = await import("@ag-ui/client");
const { CopilotRuntime, InMemoryAgentRunner } = await import("@copilotkit/runtime/v2");
const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");

const agentUrl = process.env.AGUI_BRIDGE_URL ?? "http://127.0.0.1:8000/ag-ui/run";
const host = process.env.HOST ?? "127.0.0.1";
const port = Number(process.env.PORT ?? 3000);
const basePath = "/api/copilotkit";
const dist = fileURLToPath(new URL("./dist/", import.meta.url));
const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

const runtime = new CopilotRuntime({
  agents: { default: new HttpAgent({ url: agentUrl }) },
  // Replays a thread to a reloaded page (connectAgent); agui-bridge keeps the durable copy.
  runner: new InMemoryAgentRunner(),
});
const copilotkit = createCopilotNodeListener({ runtime, basePath });

async function page(request, response) {
  const { pathname } = new URL(request.url, "http://localhost");
  const name = pathname === "/" ? "index.html" : normalize(pathname.slice(1));
  // dist/ holds the page, app.js/app.css and the lazily loaded chunks/.
  if (request.method !== "GET" || name.startsWith("..") || !TYPES[extname(name)]) {
    response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    return;
  }
  try {
    const body = await readFile(join(dist, name));
    response.writeHead(200, { "content-type": TYPES[extname(name)], "cache-control": "no-cache" }).end(body);
  } catch (error) {
    const missing = error.code === "ENOENT" || error.code === "EISDIR";
    const text = !missing ? "error\n" : name === "index.html" ? "the page is not built: run `npm run build`\n" : "not found\n";
    response.writeHead(missing ? 404 : 500, { "content-type": "text/plain" }).end(text);
  }
}

const server = createServer((request, response) => {
  if (request.url === basePath || request.url.startsWith(`${basePath}/`)) return copilotkit(request, response);
  return page(request, response);
});
server.listen(port, host, () => {
  const { port: bound } = server.address();
  process.stdout.write(`${JSON.stringify({ url: `http://${host}:${bound}/`, agent: agentUrl })}\n`);
});
// Stop at once: open streams (a run in progress, keep-alive sockets) are cut.
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
