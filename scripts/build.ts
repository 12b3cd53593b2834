// npm run build: compiles lib/ to dist/ (ES modules, .d.ts, source maps with
// their sources) with tsc, then marks each declaration file that names a
// node: module with `/// <reference types="node" />`, so that a consumer
// whose tsconfig lists no types (tsc --init's default) still loads Node's
// types for it. The sources go without the directive: Deno, which types node:
// modules itself, refuses it. The web pages go too: their HTML, CSS and data
// (JSON) copied beside the modules, their scripts (*.browser.ts) compiled for the browser by
// the function a server running from the sources compiles them with.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { compileBrowserScripts } from "../lib/web/mod.ts";

const ROOT = join(import.meta.dirname, "..");
const DIST = join(ROOT, "dist");
const REFERENCE = '/// <reference types="node" />\n';

rmSync(DIST, { recursive: true, force: true });
const tsc = spawnSync(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", join(ROOT, "tsconfig.build.json")], { stdio: "inherit" });
if (tsc.status !== 0) process.exit(tsc.status ?? 1);
let marked = 0;
for (const entry of readdirSync(DIST, { recursive: true, encoding: "utf8" })) {
  if (!entry.endsWith(".d.ts")) continue;
  const file = join(DIST, entry);
  const text = readFileSync(file, "utf8");
  if (!/from "node:|import\("node:/.test(text) || text.startsWith(REFERENCE)) continue;
  writeFileSync(file, REFERENCE + text);
  marked++;
}
let pageFiles = 0;
for (const entry of readdirSync(join(ROOT, "lib"), { recursive: true, encoding: "utf8" })) {
  if (!entry.endsWith(".html") && !entry.endsWith(".css") && !entry.endsWith(".json")) continue;
  mkdirSync(dirname(join(DIST, entry)), { recursive: true });
  copyFileSync(join(ROOT, "lib", entry), join(DIST, entry));
  pageFiles++;
}
await compileBrowserScripts(DIST, { root: ROOT });
console.log(`Built ${DIST} (${marked} declaration files reference Node's types; ${pageFiles} page files and the pages' scripts)`);
