import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";

/** The pages' compiled scripts, by their path under the library with `/` between folders (`water/explorer/map.browser.js`). */
export type CompiledScripts = ReadonlyMap<string, string>;

/** Options of {@linkcode compileOnce}. */
export interface CompileOnceOptions {
  /**
   * Where the compiler's temporary folder goes.
   * @default os.tmpdir()
   */
  readonly tmp?: string;
}

/** The temporary folders' names: `tributary-pages-<pid of the process that made it>-<random>`. */
const FOLDER_PREFIX = "tributary-pages-";
const FOLDER = /^tributary-pages-(\d+)-/;

/**
 * The pages' scripts compiled once: the first call compiles them (with
 * `compile`, e.g. {@linkcode compileBrowserScripts}) into a temporary folder,
 * reads every `.js` file it wrote into memory and removes the folder; every
 * later call answers the same, a failure too (fix the scripts and start
 * again). A process that exits while the compiler runs stops it and removes
 * the folder; the folder of one that was killed (SIGKILL) mid-compile is
 * removed by the next first call, once that process is gone. The page
 * loader of a checkout asks this as a service that serves a page starts, so
 * that the compile is under way before any page request and none sets one off.
 * @param compile compiles the scripts into the folder it is given; stops when the signal is aborted
 * @param options where the temporary folder goes
 * @returns what reads them, compiling on the first call only
 * @example
 * ```ts
 * const scripts = compileOnce((outDir, signal) => compileBrowserScripts(outDir, { signal }));
 * (await scripts()).get("relay/portal/portal.browser.js");
 * ```
 */
export function compileOnce(
  compile: (outDir: string, signal: AbortSignal) => Promise<void>,
  options: CompileOnceOptions = {},
): () => Promise<CompiledScripts> {
  let compiled: Promise<CompiledScripts> | undefined;
  return () => {
    if (compiled === undefined) {
      compiled = compileAndRead(compile, options.tmp ?? tmpdir());
      // Kept for every later call: its failure is theirs to meet, never an unhandled rejection of its own.
      compiled.catch(() => undefined);
    }
    return compiled;
  };
}

async function compileAndRead(
  compile: (outDir: string, signal: AbortSignal) => Promise<void>,
  tmp: string,
): Promise<CompiledScripts> {
  removeOrphans(tmp);
  // Made and handed to the compiler at once, on the call: the compile is under way when the call returns.
  const out = mkdtempSync(join(tmp, `${FOLDER_PREFIX}${process.pid}-`));
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
      if (entry.endsWith(".js")) {
        scripts.set(entry.split(sep).join("/"), await readFile(join(out, entry), "utf8"));
      }
    }
    return scripts;
  } finally {
    process.removeListener("exit", atExit);
    await rm(out, { recursive: true, force: true });
  }
}

/** Removes the folders that processes now gone left in `tmp` (killed mid-compile); never one of a live process. */
function removeOrphans(tmp: string): void {
  let names: string[];
  try {
    names = readdirSync(tmp);
  } catch {
    return; // Not listable here (a runtime's permissions): the mkdtemp below says what is wrong, if anything.
  }
  for (const name of names) {
    const pid = Number(FOLDER.exec(name)?.[1] ?? NaN);
    if (!Number.isSafeInteger(pid) || pid === process.pid || isAlive(pid)) continue;
    try {
      rmSync(join(tmp, name), { recursive: true, force: true });
    } catch {
      // Another's to remove, or gone already.
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive, another user's.
    return (error as { code?: string }).code === "EPERM";
  }
}
