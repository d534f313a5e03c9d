// Bundles src/main.jsx (React, @assistant-ui/react, @assistant-ui/react-ag-ui,
// @ag-ui/client and clients/js/stop.mjs) into dist/app.js with the pinned
// esbuild; copies index.html and app.css.
import { copyFile, mkdir, rm } from "node:fs/promises";
import { build } from "esbuild";

await rm("dist", { recursive: true, force: true });
await mkdir("dist");
const result = await build({
  entryPoints: { app: "src/main.jsx" },
  bundle: true,
  outdir: "dist",
  format: "esm",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  minify: true,
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
  logLevel: "warning",
  metafile: true,
});
await copyFile("src/index.html", "dist/index.html");
await copyFile("src/app.css", "dist/app.css");
for (const [file, { bytes }] of Object.entries(result.metafile.outputs)) {
  process.stdout.write(`${file} ${(bytes / 1024).toFixed(0)} KiB\n`);
}
