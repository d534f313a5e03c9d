// Bundles src/main.js (the real @ag-ui/client, rxjs and clients/js/reconnect.mjs)
// into the Python package, so the playground works offline and from a wheel.
// The output is committed; tests/test_playground.py rebuilds it and checks that
// the committed file is what this script makes.
//
//   node build.mjs [outfile]
import { build } from "esbuild";
import { fileURLToPath } from "node:url";

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const outfile = process.argv[2] ?? here("../../python/agui_bridge/playground/static/playground.js");

await build({
  entryPoints: [here("src/main.js")],
  outfile,
  bundle: true,
  minify: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  legalComments: "eof",
  charset: "utf8",
  banner: { js: "// agui-bridge playground: built from clients/playground (npm run build); do not edit." },
  logLevel: "warning",
});
