// Bundles src/main.jsx (React + @copilotkit/react-core v2 and its CSS) into
// dist/app.js + dist/app.css with the pinned esbuild; copies index.html.
import { copyFile, mkdir, rm } from "node:fs/promises";
import { build } from "esbuild";

await rm("dist", { recursive: true, force: true });
await mkdir("dist");
const result = await build({
  entryPoints: { app: "src/main.jsx" },
  bundle: true,
  outdir: "dist",
  format: "esm",
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  platform: "browser",
  target: "es2022",
  jsx: "automatic",
  minify: true,
  legalComments: "none",
  define: { "process.env.NODE_ENV": '"production"' },
  loader: { ".woff": "empty", ".woff2": "empty", ".ttf": "empty" },
  logLevel: "warning",
  metafile: true,
});
await copyFile("src/index.html", "dist/index.html");
for (const [file, { bytes }] of Object.entries(result.metafile.outputs)) {
  process.stdout.write(`${file} ${(bytes / 1024).toFixed(0)} KiB\n`);
}
