import { mkdtempSync, rmSync } from "node:fs";
import { readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";

/** The pages' compiled scripts, by their path under the library with `/` between folders (`water/explorer/map.browser.js`). */
export type CompiledScripts = ReadonlyMap<string, string>;

/**
 * The pages' scripts compiled once: the first call compiles them (with
 * `compile`, e.g. {@linkcode compileBrowserScripts}) into a temporary folder,
 * reads every `.js` file it wrote into memory and removes the folder; every
 * later call answers the same, a failure too (fix the scripts and start
 * again). A process that exits while the compiler runs stops it and removes
 * the folder. The page loader of a checkout asks this when a service that
 * serves a page starts, so that no page request ever waits for a compiler.
 * @param compile compiles the scripts into the folder it is given
 * @returns what reads them, compiling on the first call only
 * @example
 * ```ts
 * const scripts = compileOnce((outDir, signal) => compileBrowserScripts(outDir, { signal }));
 * (await scripts()).get("relay/portal/portal.browser.js");
 * ```
 */
export function compileOnce(compile: (outDir: string, signal: AbortSignal) => Promise<void>): () => Promise<CompiledScripts> {
  let compiled: Promise<CompiledScripts> | undefined;
  return () => {
    if (compiled === undefined) {
      compiled = compileAndRead(compile);
      // Kept for every later call: its failure is theirs to meet, never an unhandled rejection of its own.
      compiled.catch(() => undefined);
    }
    return compiled;
  };
}

async function compileAndRead(compile: (outDir: string, signal: AbortSignal) => Promise<void>): Promise<CompiledScripts> {
  // Made and handed to the compiler at once, on the call: the compile is under way when the call returns.
  const out = mkdtempSync(join(tmpdir(), "tributary-pages-"));
  const stop = new AbortController();
  // Exiting mid-compile (a server stopped at once): no compiler left running, no folder left behind.
  const atExit = (): void => {
    stop.abort();
    try {
      rmSync(out, { recursive: true, force: true, maxRetries: 2 });
    } catch {
      // Exiting all the same: a temporary folder left is no reason to fail.
    }
  };
  process.once("exit", atExit);
  try {
    await compile(out, stop.signal);
    const scripts = new Map<string, string>();
    for (const entry of await readdir(out, { recursive: true, encoding: "utf8" })) {
      if (entry.endsWith(".js")) scripts.set(entry.split(sep).join("/"), await readFile(join(out, entry), "utf8"));
    }
    return scripts;
  } finally {
    process.removeListener("exit", atExit);
    await rm(out, { recursive: true, force: true });
  }
}
