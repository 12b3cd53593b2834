// npm run build: compiles lib/ to dist/ (ES modules and .d.ts, no source
// maps: the package ships no sources for them to name) with tsc, and checks
// that no declaration names Node's types, so that a consumer needs no
// @types/node (tsc --init lists no types). The web pages go too: their HTML,
// CSS and data (JSON) copied beside the modules, their modules (*.browser.ts:
// each page's and the shared ones of lib/web/browser/) compiled for the
// browser by the function a server running from the sources compiles them
// with, at their paths under lib/, where the page loader reads them (a
// domain a page imports, the sync client, is compiled again with them: the
// same JavaScript the library's build wrote there).
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { compileBrowserScripts } from "../lib/web/compile_browser_scripts.ts";

const ROOT = join(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");
/** What names Node's own types in a declaration: a node: module, Node's globals, a reference to @types/node. */
const NODE_TYPES =
  /from "node:[^"]*"|import\("node:[^"]*"\)|\bNodeJS\.\w+|\bBuffer\b|<reference types="node"/g;

rmSync(DIST, { recursive: true, force: true });
const tsc = spawnSync(join(ROOT, "node_modules", ".bin", "tsc"), [
  "-p",
  join(ROOT, "tsconfig.build.json"),
], { stdio: "inherit" });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
// The declarations must stand without Node's types (@types/node), which the
// package does not depend on: a public signature names a narrow interface of
// its own (NodeListenerRequest, NodeKeyObject, HostLookup) instead.
const nodeTypes: string[] = [];
for (const entry of readdirSync(DIST, { recursive: true, encoding: "utf8" })) {
  if (!entry.endsWith(".d.ts")) continue;
  // Comments aside: an @example may well show `import { createServer } from "node:http"`.
  const text = readFileSync(join(DIST, entry), "utf8").replace(/\/\*[^]*?\*\//g, "").replace(
    /^\s*\/\/(?!\/).*$/gm,
    "",
  );
  for (const match of text.matchAll(NODE_TYPES)) nodeTypes.push(`dist/${entry}: ${match[0]}`);
}
if (nodeTypes.length > 0) {
  console.error(
    `Cannot build: declarations name Node's types, which a consumer without @types/node lacks:\n${
      nodeTypes.join("\n")
    }`,
  );
  process.exit(1);
}
let pageFiles = 0;
for (const entry of readdirSync(join(ROOT, "lib"), { recursive: true, encoding: "utf8" })) {
  if (!entry.endsWith(".html") && !entry.endsWith(".css") && !entry.endsWith(".json")) continue;
  mkdirSync(dirname(join(DIST, entry)), { recursive: true });
  copyFileSync(join(ROOT, "lib", entry), join(DIST, entry));
  pageFiles++;
}
await compileBrowserScripts(DIST, { root: ROOT });
console.log(
  `Built ${DIST} (declarations free of Node's types; ${pageFiles} page files and the pages' modules)`,
);
