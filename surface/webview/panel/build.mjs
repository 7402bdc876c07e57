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

const args = process.argv.slice(2);
const outAt = args.indexOf("--out");
if (outAt >= 0 && !args[outAt + 1]) {
  console.error("build.mjs: --out needs a file");
  process.exit(2);
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
const bundle = result.outputFiles[0].contents; // the bytes, as written

if (args.includes("--check")) {
  let have = null;
  try {
    have = readFileSync(out);
  } catch (e) {
    // none yet: a difference like any other
  }
  if (have === null || !Buffer.from(bundle).equals(have)) {
    const why = have === null ? "is missing" : "differs from what surface/webview/panel/src builds";
    console.error(`surface/webview/static/panel.js ${why}: rebuild it with \`make panel\` (or \`npm ci && npm run build\` in surface/webview/panel) and commit it`);
    process.exit(1);
  }
} else {
  writeFileSync(outAt >= 0 ? args[outAt + 1] : out, bundle);
}
