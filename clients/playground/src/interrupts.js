// The answers an interrupt offers, from its responseSchema where there is one.

const DECLINE = new Set(["no", "false", "deny", "denied", "decline", "declined", "reject", "rejected"]);

// [{label, payload, status, kind}] for the buttons; `free: true` when the
// schema asks for something buttons cannot offer (a text box then).
export function choicesFor(interrupt) {
  const schema = interrupt?.responseSchema;
  const cancel = { label: "Cancel", status: "cancelled", kind: "cancel" };
  if (schema && Array.isArray(schema.enum) && schema.enum.length > 0) {
    return { choices: [...schema.enum.map((value) => answer(value)), cancel], free: false };
  }
  if (schema && schema.const !== undefined) return { choices: [answer(schema.const), cancel], free: false };
  if (schema && schema.type === "boolean") return { choices: [answer(true), answer(false), cancel], free: false };
  const options = schema?.oneOf ?? schema?.anyOf;
  if (Array.isArray(options) && options.every((o) => o && o.const !== undefined)) {
    return { choices: [...options.map((o) => answer(o.const, o.title)), cancel], free: false };
  }
  return { choices: [cancel], free: true };
}

function answer(value, title) {
  const label = title ?? (typeof value === "string" ? value : JSON.stringify(value));
  const kind = DECLINE.has(String(value).toLowerCase()) ? "decline" : "approve";
  return { label, payload: value, status: "resolved", kind };
}
