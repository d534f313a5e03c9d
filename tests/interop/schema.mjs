// Judges a JSON value with one of @ag-ui/core 1.0.0's own schemas; prints
// {valid, issues}.   node schema.mjs <SchemaName> <value.json>

import { readFile } from "node:fs/promises";
import * as schemas from "@ag-ui/core/schemas";

const [name, path] = process.argv.slice(2);
const schema = schemas[name];
if (!schema) throw new Error(`@ag-ui/core has no schema ${name}`);
const parsed = schema.safeParse(JSON.parse(await readFile(path, "utf8")));
console.log(JSON.stringify({ valid: parsed.success, issues: parsed.success ? [] : parsed.error.issues }));
