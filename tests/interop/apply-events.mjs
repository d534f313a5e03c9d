// Feeds event lists through the real client's verifyEvents and defaultApplyEvents.
//
// stdin: {"version": "1.0.0" | "0.0.58", "cases": [[event, ...], ...]}
// stdout: one result per case: {"ok", "messages", "state", "warnings", "error"}
// Each case starts from an empty client (no messages, state {}), as a reader
// joining a run does; any console warning or error is reported, not hidden.

import { readFileSync } from "node:fs";
import { from, lastValueFrom, toArray } from "rxjs";

const PACKAGES = { "1.0.0": "@ag-ui/client", "0.0.58": "client-0058" };

const request = JSON.parse(readFileSync(0, "utf8"));
const client = await import(PACKAGES[request.version]);

const warnings = [];
for (const level of ["warn", "error"]) {
  console[level] = (...args) => warnings.push(args.map(String).join(" "));
}

async function apply(events) {
  warnings.length = 0;
  const agent = { messages: [], state: {} };
  const input = { threadId: "t", runId: "r", messages: [], state: {}, tools: [], context: [] };
  let messages = [];
  let state = {};
  try {
    const verified = from(events).pipe(client.verifyEvents(false));
    const mutations = await lastValueFrom(
      client.defaultApplyEvents(input, verified, agent, []).pipe(toArray()),
    );
    for (const mutation of mutations) {
      if (mutation.messages !== undefined) messages = mutation.messages;
      if (mutation.state !== undefined) state = mutation.state;
    }
    return { ok: warnings.length === 0, messages, state, warnings: [...warnings] };
  } catch (error) {
    return { ok: false, messages, state, warnings: [...warnings], error: String(error) };
  }
}

const results = [];
for (const events of request.cases) {
  results.push(await apply(events));
}
process.stdout.write(JSON.stringify(results));
