import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import * as nodeModule from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Options of {@linkcode compileBrowserScripts}. */
export interface CompileBrowserScriptsOptions {
  /**
   * The checkout: the folder of `tsconfig.browser.json` and `node_modules`.
   * @default the checkout this module is in
   */
  readonly root?: string;
  /**
   * How: `tsc`, the project's TypeScript, which checks the types as it
   * compiles; `strip`, Node's own `stripTypeScriptTypes` (Node 22.13 and
   * later), which only removes them, for a runtime without the dev
   * dependencies such as the container image; `auto`, `tsc` when TypeScript
   * and `tsconfig.browser.json` are there, else `strip` when Node has it.
   * @default {"auto"}
   */
  readonly compiler?: "auto" | "tsc" | "strip";
  /**
   * Stops the compiler (the `tsc` process and any it started), e.g. when the process exits.
   * @default never stopped
   */
  readonly signal?: AbortSignal;
}

/** Node's type stripping (Node 22.13 and later); undefined on Node 20. */
const stripTypeScriptTypes =
  (nodeModule as { stripTypeScriptTypes?: (code: string) => string }).stripTypeScriptTypes;

/**
 * Compiles the pages' scripts (`lib/**\/*.browser.ts`, typed against the DOM
 * by `tsconfig.browser.json`: each page's modules, the modules the pages
 * share, `lib/web/browser/`, and the library modules they import, such as
 * `lib/sync_client/`) to JavaScript under `outDir`, at the paths they
 * have under `lib/`, with the project's own `tsc`: `npm run build` does it
 * into `dist/`, and a server running from the sources does it once, as the
 * services that serve pages start (`compileOnce`), so a
 * checkout needs no build step. A type error fails it.
 * Where TypeScript is not installed (the container image runs the sources on
 * Node 24 without the dev dependencies), Node's own type stripping does it
 * instead, with relative `.ts` imports written `.js` as `tsc` writes them.
 * @param outDir where the `.browser.js` files go
 * @param options the checkout; the compiler; what stops it
 * @throws {Error} when neither TypeScript nor Node's type stripping is there, or `tsc` reports an error (its output in the message)
 * @example
 * ```ts
 * await compileBrowserScripts("dist"); // dist/relay/portal/portal.browser.js, ...
 * ```
 */
export async function compileBrowserScripts(
  outDir: string,
  options: CompileBrowserScriptsOptions = {},
): Promise<void> {
  // The checkout of this module: lib/web/ is two levels down (read here, not at import, for runtimes without a file path).
  const root = options.root ?? fileURLToPath(new URL("../../", import.meta.url));
  const config = join(root, "tsconfig.browser.json");
  const compiler = options.compiler ?? "auto";
  const tsc = compiler === "strip" ? undefined : findTsc(root);
  if (
    compiler === "strip" ||
    (compiler === "auto" && (tsc === undefined || !existsSync(config)) &&
      stripTypeScriptTypes !== undefined)
  ) {
    if (stripTypeScriptTypes === undefined) {
      throw new Error(
        "Cannot strip the pages' scripts: this Node has no stripTypeScriptTypes (Node 22.13 and later have it)",
      );
    }
    await stripScripts(join(root, "lib"), outDir, stripTypeScriptTypes);
    return;
  }
  if (!existsSync(config)) {
    throw new Error(
      `Cannot compile the pages' scripts: ${config} is missing (an installed package has them compiled)`,
    );
  }
  if (tsc === undefined) {
    throw new Error(
      "Cannot compile the pages' scripts: the typescript package is not installed (npm ci installs it)",
    );
  }
  const signal = options.signal;
  signal?.throwIfAborted();
  // In a process group of its own, stopped whole and at once (SIGKILL): bin/tsc is a Node script
  // that may run the native compiler as its child, which would otherwise write on for a moment.
  const detached = process.platform !== "win32";
  const child = spawn(process.execPath, [
    tsc,
    "-p",
    config,
    "--noEmit",
    "false",
    "--outDir",
    outDir,
  ], { stdio: ["ignore", "pipe", "pipe"], detached });
  const stop = (): void => {
    try {
      if (detached && child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      else child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
  };
  signal?.addEventListener("abort", stop, { once: true });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (output += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (output += text));
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", resolve);
    });
    signal?.throwIfAborted();
    if (code !== 0) {
      throw new Error(
        `Cannot compile the pages' scripts: tsc exited with ${code}:\n${output.trim()}`,
      );
    }
  } finally {
    signal?.removeEventListener("abort", stop);
  }
}

/** The project's `tsc`, when TypeScript is installed in the checkout. */
function findTsc(root: string): string | undefined {
  try {
    return join(
      dirname(
        nodeModule.createRequire(join(root, "package.json")).resolve("typescript/package.json"),
      ),
      "bin",
      "tsc",
    );
  } catch {
    return undefined;
  }
}

// A relative module specifier ending in .ts, in an import, export or import().
const RELATIVE_TS_SPECIFIER = /((?:\bfrom|\bimport)\s*\(?\s*)(["'])(\.{1,2}\/[^"'\n]*?)\.ts\2/g;

/**
 * Writes every `lib/**\/*.browser.ts` to `outDir` as `.browser.js` with its
 * types stripped (whitespace in their place, so lines and columns stay), and
 * every module of the library they import (a domain's `mod.ts` and what it
 * imports, as `tsc` follows them), each at its path under `lib/`.
 */
async function stripScripts(
  library: string,
  outDir: string,
  strip: (code: string) => string,
): Promise<void> {
  const pending = (await readdir(library, { recursive: true, encoding: "utf8" })).filter((
    entry,
  ) => entry.endsWith(".browser.ts")).map((entry) => join(library, entry));
  const seen = new Set(pending);
  for (let file = pending.shift(); file !== undefined; file = pending.shift()) {
    const imported: string[] = [];
    const code = strip(await readFile(file, "utf8")).replace(
      RELATIVE_TS_SPECIFIER,
      (_whole, head: string, quote: string, specifier: string) => {
        imported.push(resolve(dirname(file), `${specifier}.ts`));
        return `${head}${quote}${specifier}.js${quote}`;
      },
    );
    const target = join(outDir, `${relative(library, file).slice(0, -".ts".length)}.js`);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, code);
    for (const next of imported) {
      if (seen.has(next)) continue;
      seen.add(next);
      pending.push(next);
    }
  }
}
