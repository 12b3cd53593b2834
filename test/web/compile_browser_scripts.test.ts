import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import * as nodeModule from "node:module";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import { after, describe, it } from "node:test";
import { compileBrowserScripts } from "../../lib/web/compile_browser_scripts.ts";
import { node24, node24Skip } from "../_helpers/runtimes.ts";

const ROOT = join(import.meta.dirname, "..", "..");
/** A module of a page the checkout holds, at its path under lib/. */
const QUERY = join("water", "explorer", "query.browser.js");
/** The sync client's modules: the playground's page imports the domain's mod.ts, and tsc compiles the domain with it. */
const SYNC_CLIENT = readdirSync(join(ROOT, "lib", "sync_client")).filter((name) =>
  name.endsWith(".ts")
).map((name) => `sync_client/${name.slice(0, -".ts".length)}.js`);
/** Every module of the pages, at its path under lib/. */
const MODULES = [
  "accounts/playground/changes.browser.js",
  "accounts/playground/device.browser.js",
  "accounts/playground/dom.browser.js",
  "accounts/playground/playground.browser.js",
  "relay/portal/portal.browser.js",
  ...SYNC_CLIENT,
  "water/explorer/drawing.browser.js",
  "water/explorer/explorer.browser.js",
  "water/explorer/map.browser.js",
  "water/explorer/plot.browser.js",
  "water/explorer/query.browser.js",
  "water/explorer/summary.browser.js",
  "water/explorer/table.browser.js",
  "web/browser/api_client.browser.js",
].sort();

/** The .js files under a folder, by their path with / between folders. */
function modulesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((entry) =>
    entry.endsWith(".js")
  ).map((entry) => entry.split(sep).join("/")).sort();
}

const work = mkdtempSync(join(tmpdir(), "tributary-scripts-"));
after(() => rmSync(work, { recursive: true, force: true }));
let folders = 0;
const folder = (): string => join(work, `f${++folders}`);

/** The names a module exports as functions, in order. */
function exportedFunctions(code: string): string[] {
  return [...code.matchAll(/^export (?:async )?function (\w+)/gm)].map((match) => match[1]!);
}

describe("compileBrowserScripts()", () => {
  it("compiles every page's modules and the shared ones with the project's tsc, at their paths under lib/", async () => {
    const out = folder();
    await compileBrowserScripts(out);
    assert.deepEqual(modulesUnder(out), MODULES);
    const code = readFileSync(join(out, QUERY), "utf8");
    assert.ok(exportedFunctions(code).includes("buildFilter"));
    assert.doesNotMatch(code, /: Selection\b|^export interface/m, "no types left");
    // A shared module is imported at its own path, written .js.
    assert.match(
      readFileSync(join(out, "relay", "portal", "portal.browser.js"), "utf8"),
      /^import \{ ApiError, createApiClient \} from "\.\.\/\.\.\/web\/browser\/api_client\.browser\.js";$/m,
    );
  });

  it("stops tsc when its signal is aborted, before it starts or while it runs", async () => {
    await assert.rejects(
      compileBrowserScripts(folder(), { compiler: "tsc", signal: AbortSignal.abort() }),
      { name: "AbortError" },
    );
    const stop = new AbortController();
    const running = compileBrowserScripts(folder(), { compiler: "tsc", signal: stop.signal });
    stop.abort();
    await assert.rejects(running, { name: "AbortError" });
  });

  it("refuses to strip the types on a Node without stripTypeScriptTypes", {
    skip: "stripTypeScriptTypes" in nodeModule
      ? "this Node strips types (the test below covers it)"
      : false,
  }, async () => {
    await assert.rejects(
      compileBrowserScripts(folder(), { compiler: "strip" }),
      /stripTypeScriptTypes/,
    );
  });

  it(
    "strips the types with Node 24's own where TypeScript is not installed, as in the container image",
    { skip: node24Skip },
    async () => {
      // A checkout as the image holds it: the sources, no tsconfig.browser.json, no node_modules.
      const image = folder();
      mkdirSync(image);
      symlinkSync(join(ROOT, "lib"), join(image, "lib"));
      copyFileSync(join(ROOT, "package.json"), join(image, "package.json"));
      const out = folder();
      const script = join(work, "strip.mjs");
      writeFileSync(
        script,
        `import { compileBrowserScripts } from ${
          JSON.stringify(join(ROOT, "lib", "web", "compile_browser_scripts.ts"))
        };\nawait compileBrowserScripts(process.argv[2], { root: process.argv[3] });\n`,
      );
      const run = spawnSync(node24!, [script, out, image], {
        encoding: "utf8",
        env: { ...process.env, NODE_V8_COVERAGE: "" },
      });
      assert.equal(run.status, 0, run.stderr);
      // The imports followed from the pages' modules: a module imported for its types alone is not (tsc emits it empty).
      assert.deepEqual(
        modulesUnder(out),
        MODULES.filter((module) => module !== "sync_client/types.js"),
      );
      const stripped = readFileSync(join(out, QUERY), "utf8");
      assert.doesNotMatch(stripped, /: Selection\b|^export interface/m, "no types left");
      // It parses as a module on Node 24, and exports what tsc's output exports.
      const module = join(work, "query.mjs");
      writeFileSync(module, stripped);
      const check = spawnSync(node24!, ["--check", module], { encoding: "utf8" });
      assert.equal(check.status, 0, check.stderr);
      const compiled = folder();
      await compileBrowserScripts(compiled);
      assert.deepEqual(
        exportedFunctions(stripped),
        exportedFunctions(readFileSync(join(compiled, QUERY), "utf8")),
      );
      // Imports of other modules written .js, as tsc writes them.
      assert.match(
        readFileSync(join(out, "water", "explorer", "explorer.browser.js"), "utf8"),
        /from "\.\.\/\.\.\/web\/browser\/api_client\.browser\.js";/,
      );
    },
  );
});
