// The real CopilotKit runtime (v2) in front of one AG-UI agent, as a CopilotKit
// app serves it: `CopilotRuntime` with the `InMemoryAgentRunner`, behind
// `createCopilotNodeListener`, its agent an `HttpAgent` pointed at the agent URL.
// Prints {"port": N} on stdout once it listens on 127.0.0.1.
//
//   node copilotkit-runtime.mjs <agent-url> [basePath] [graphId]
//
// With a graphId the agent is the runtime's `LangGraphAgent`
// (`@copilotkit/runtime/langgraph`, over `@ag-ui/langgraph`) for that graph, and
// <agent-url> is the LangGraph deployment URL (agui-bridge's `/langgraph`).
// The HttpAgent comes from the @ag-ui/client that @copilotkit/runtime itself
// depends on (what an app that installs the runtime gets), not the 1.0.0 one
// run-agent.mjs tests beside it.

import { createServer } from "node:http";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { CopilotRuntime, InMemoryAgentRunner } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

const [agentUrl, basePath = "/api/copilotkit", graphId] = process.argv.slice(2);
if (!agentUrl) {
  process.stderr.write("usage: node copilotkit-runtime.mjs <agent-url> [basePath]\n");
  process.exit(2);
}

const fromRuntime = createRequire(createRequire(import.meta.url).resolve("@copilotkit/runtime"));
const clientDir = fromRuntime.resolve("@ag-ui/client/package.json").replace(/package\.json$/, "");
const { HttpAgent } = await import(pathToFileURL(`${clientDir}dist/index.mjs`).href);

let agent;
if (graphId) {
  const { LangGraphAgent } = await import("@copilotkit/runtime/langgraph");
  agent = new LangGraphAgent({ deploymentUrl: agentUrl, graphId });
} else {
  agent = new HttpAgent({ url: agentUrl });
}
const runtime = new CopilotRuntime({
  agents: { default: agent },
  runner: new InMemoryAgentRunner(),
});
const server = createServer(createCopilotNodeListener({ runtime, basePath }));
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${JSON.stringify({ port: server.address().port })}\n`);
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
