import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { compileBrowserScripts } from "./compile_browser_scripts.ts";
import type { WebPage } from "./page_routes.ts";

/** Options of {@linkcode pageLoader}. */
export interface PageLoaderOptions {
  /**
   * Compiles the pages' scripts into a folder, when the page's script is not compiled yet.
   * @default compileBrowserScripts
   */
  readonly compile?: (outDir: string) => Promise<void>;
  /**
   * Other files of the page's folder served beside it, each by its name and
   * type, e.g. `{ name: "basemap.json", contentType: "application/json" }`.
   * @default none
   */
  readonly files?: readonly { readonly name: string; readonly contentType: string }[];
}

/**
 * Reads a page from its folder: `<name>.html`, `<name>.css` and its script,
 * served as `<name>.css` and `<name>.js`, and the other files named. Installed, the script is the
 * `<name>.browser.js` the build put beside the HTML; in a checkout it is
 * compiled from `<name>.browser.ts` (into a temporary folder, removed after).
 * @param dir the page's folder under the library, e.g. `new URL("./portal/", import.meta.url)`
 * @param name the page's file name without extension, e.g. `portal`
 * @param options how to compile; other files
 * @returns a function that loads the page, for {@linkcode pageRoutes}
 */
export function pageLoader(dir: string | URL, name: string, options: PageLoaderOptions = {}): () => Promise<WebPage> {
  const folder = typeof dir === "string" ? dir : fileURLToPath(dir);
  const compile = options.compile ?? ((outDir: string) => compileBrowserScripts(outDir));
  const files = options.files ?? [];
  return async () => {
    const [html, css, ...others] = await Promise.all([
      readFile(join(folder, `${name}.html`), "utf8"),
      readFile(join(folder, `${name}.css`), "utf8"),
      ...files.map((file) => readFile(join(folder, file.name), "utf8")),
    ]);
    const built = join(folder, `${name}.browser.js`);
    let script: string;
    if (existsSync(built)) {
      script = await readFile(built, "utf8");
    } else {
      const out = await mkdtemp(join(tmpdir(), "tributary-pages-"));
      try {
        await compile(out);
        // The library's folder (lib/ in a checkout) is the compiler's root: the script lands at its path under it.
        const library = fileURLToPath(new URL("../", import.meta.url));
        script = await readFile(join(out, relative(library, folder), `${name}.browser.js`), "utf8");
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    }
    return {
      html,
      assets: [
        { name: `${name}.css`, contentType: "text/css; charset=utf-8", body: css },
        { name: `${name}.js`, contentType: "text/javascript; charset=utf-8", body: script },
        ...files.map((file, index) => ({ name: file.name, contentType: file.contentType, body: others[index]! })),
      ],
    };
  };
}
