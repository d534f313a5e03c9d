// An agent's capabilities, judged by @ag-ui/core 1.0.0's own schema, and read
// through clients/js/reconnect.mjs's getCapabilities(); prints one JSON result.
//
//   node capabilities.mjs <agentUrl> [<headersJson>]

import { AgentCapabilitiesSchema } from "@ag-ui/core/schemas";

const [url, headersJson] = process.argv.slice(2);
const headers = headersJson ? JSON.parse(headersJson) : {};
const { HttpAgent } = await import("@ag-ui/client");
const { Observable } = await import("rxjs");
const { withReconnect } = await import(new URL("../../clients/js/reconnect.mjs", import.meta.url));
const Agent = withReconnect(HttpAgent, Observable);

const agent = new Agent({ url, headers });
let capabilities;
let error;
try {
  capabilities = await agent.getCapabilities();
} catch (caught) {
  error = String(caught?.message ?? caught);
}
const parsed = capabilities === undefined ? null : AgentCapabilitiesSchema.safeParse(capabilities);
console.log(
  JSON.stringify({
    capabilities: capabilities ?? null,
    error: error ?? null,
    valid: parsed?.success ?? false,
    issues: parsed && !parsed.success ? parsed.error.issues : [],
    // what the schema keeps: a field it does not know would be kept too (loose), so
    // compare the known sections for equality on the Python side
    strict: parsed?.success ? parsed.data : null,
  }),
);
