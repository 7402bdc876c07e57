// Bundles the panel's page (src/, ES modules) into ../static/panel.js, one
// classic script, which surface/webview/server.go serves and embeds (go:embed: no
// node step at Go build time) and labextension/scripts/panel-assets.mjs
// inlines into the sidebar. The bundle is committed; its first lines name
// the sha256 of the sources it was built from, which a Go test
// (surface/webview/static_test.go) checks against src/, so a stale bundle fails
// `go test`.
//   node build.mjs            write ../static/panel.js
//   node build.mjs --check    fail when ../static/panel.js is not what the sources build
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const src = join(here, "src");
const out = join(here, "..", "static", "panel.js");

// sourcesHash: sha256 over src/'s files in name order, each its name, a
// NUL, its bytes, a NUL (surface/webview/static_test.go computes the same).
function sourcesHash() {
  const h = createHash("sha256");
  for (const name of readdirSync(src).filter((n) => n.endsWith(".js")).sort()) {
    h.update(name + "\0");
    h.update(readFileSync(join(src, name)));
    h.update("\0");
  }
  return h.digest("hex");
}

const result = await build({
  absWorkingDir: here, // the bundle names its modules relative to it: src/…
  entryPoints: ["src/main.js"],
  bundle: true,
  format: "iife",
  target: "es2020",
  charset: "utf8",
  legalComments: "none",
  write: false,
  logLevel: "error",
  banner: {
    js: "// agentkernel's web panel, bundled from surface/webview/panel/src by surface/webview/panel/build.mjs: do not edit.\n" +
      `// sources sha256 ${sourcesHash()}`,
  },
});
const bundle = result.outputFiles[0].text;

if (process.argv.includes("--check")) {
  let have = "";
  try {
    have = readFileSync(out, "utf8");
  } catch (e) {
    // none yet
  }
  if (have !== bundle) {
    console.error("surface/webview/static/panel.js is not what surface/webview/panel/src builds: run `npm run build` in surface/webview/panel");
    process.exit(1);
  }
} else {
  writeFileSync(out, bundle);
}
