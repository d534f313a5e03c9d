// The client is the judge: any console.warn / console.error (how @ag-ui/client
// and CopilotKit report "[ag-ui]" problems, failed patches, unknown ids) and any
// unhandled rejection is recorded in `warnings`, which makes a harness's `ok`
// false. Imported first, so it is in place before any client package loads.

export const warnings = [];

for (const level of ["warn", "error"]) {
  console[level] = (...args) => {
    warnings.push({
      level,
      text: args
        .map((a) => (a instanceof Error ? `${a.name}: ${a.message}` : typeof a === "string" ? a : safeJson(a)))
        .join(" "),
    });
  };
}
process.on("unhandledRejection", (reason) => {
  warnings.push({ level: "unhandledRejection", text: String(reason) });
});

function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
