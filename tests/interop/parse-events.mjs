// Parses events with a client's own event schemas, as its HTTP pipeline does
// (@ag-ui/client 0.0.58 runs EventSchemas.parse on every event it reads).
//
// stdin: {"version": "1.0.0" | "0.0.58", "events": [event, ...]}
// stdout: one {valid, issues} per event.

import { readFileSync } from "node:fs";

const CORES = { "1.0.0": "@ag-ui/core/schemas", "0.0.58": "core-0058" };
const request = JSON.parse(readFileSync(0, "utf8"));
const { EventSchemas } = await import(CORES[request.version]);
const results = request.events.map((event) => {
  const parsed = EventSchemas.safeParse(event);
  return { valid: parsed.success, issues: parsed.success ? [] : parsed.error.issues };
});
process.stdout.write(JSON.stringify(results) + "\n");
