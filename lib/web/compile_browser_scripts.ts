import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** Options of {@linkcode compileBrowserScripts}. */
export interface CompileBrowserScriptsOptions {
  /**
   * The checkout: the folder of `tsconfig.browser.json` and `node_modules`.
   * @default the checkout this module is in
   */
  readonly root?: string;
}

/**
 * Compiles the pages' scripts (`lib/**\/*.browser.ts`, typed against the DOM
 * by `tsconfig.browser.json`) to JavaScript under `outDir`, at the paths they
 * have under `lib/`, with the project's own `tsc`: `npm run build` does it
 * into `dist/`, and a server running from the sources does it on a page's
 * first request, so the page needs no build step. A type error fails it.
 * @param outDir where the `.browser.js` files go
 * @param options the checkout
 * @throws {Error} when TypeScript is not installed or `tsc` reports an error (its output in the message)
 * @example
 * ```ts
 * await compileBrowserScripts("dist"); // dist/relay/portal/portal.browser.js, ...
 * ```
 */
export async function compileBrowserScripts(outDir: string, options: CompileBrowserScriptsOptions = {}): Promise<void> {
  // The checkout of this module: lib/web/ is two levels down (read here, not at import, for runtimes without a file path).
  const root = options.root ?? fileURLToPath(new URL("../../", import.meta.url));
  const config = join(root, "tsconfig.browser.json");
  if (!existsSync(config)) throw new Error(`Cannot compile the pages' scripts: ${config} is missing (an installed package has them compiled)`);
  let tsc: string;
  try {
    tsc = join(dirname(createRequire(join(root, "package.json")).resolve("typescript/package.json")), "bin", "tsc");
  } catch (error) {
    throw new Error("Cannot compile the pages' scripts: the typescript package is not installed (npm ci installs it)", { cause: error });
  }
  const child = spawn(process.execPath, [tsc, "-p", config, "--noEmit", "false", "--outDir", outDir], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (output += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (output += text));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  if (code !== 0) throw new Error(`Cannot compile the pages' scripts: tsc exited with ${code}:\n${output.trim()}`);
}
