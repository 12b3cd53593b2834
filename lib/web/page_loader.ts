import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { compileBrowserScripts } from "./compile_browser_scripts.ts";
import { type CompiledScripts, compileOnce } from "./compile_once.ts";
import type { WebAsset, WebPage } from "./page_routes.ts";

/** Options of {@linkcode pageLoader}. */
export interface PageLoaderOptions {
  /**
   * The pages' scripts compiled from the sources, for a checkout, where the
   * build has not put them beside the page: by their path under the library.
   * @default this process's own, compiled once for every page (`compileOnce` with `compileBrowserScripts`)
   */
  readonly scripts?: () => Promise<CompiledScripts>;
  /**
   * Other files of the page's folder served beside it, each by its name and
   * type, e.g. `{ name: "basemap.json", contentType: "application/json" }`.
   * @default none
   */
  readonly files?: readonly { readonly name: string; readonly contentType: string }[];
  /**
   * The pages' shared stylesheets of the library's `web/browser/` folder
   * that the page links (before its own), each served beside it by its
   * name, e.g. `["page.css"]`: two pages serve one as the same bytes.
   * @default none
   */
  readonly styles?: readonly string[];
  /**
   * The library's folder, whose domains' `mod.js` a page's module may import
   * (see {@linkcode pageLoader}).
   * @default the folder of the library this module is in: lib/ in a checkout, dist/ installed
   */
  readonly library?: string | URL;
}

const JS_TYPE = "text/javascript; charset=utf-8";
const CSS_TYPE = "text/css; charset=utf-8";
const BROWSER_JS = ".browser.js";

/** The scripts of a process running from the sources, compiled the first time a page loads and kept. */
const PROCESS_SCRIPTS = compileOnce((outDir, signal) => compileBrowserScripts(outDir, { signal }));

/**
 * A static `import` or `export ... from` at the start of a line, in a
 * module as `tsc` or type stripping writes it: what precedes the specifier,
 * its quote, and the specifier. (A dynamic `import()` the pages do not use.)
 */
const IMPORT = /^([ \t]*(?:import|export)\b(?:[^'"`;]*?\bfrom)?\s*)(["'])([^"'\n]+)\2/gm;

/**
 * Reads a page from its folder: `<name>.html`, `<name>.css`, its modules and
 * the other files named, and the shared stylesheets named from the library's
 * `web/browser/`. The page's module is `<name>.browser.js` and is
 * served as `<name>.js`; every module it imports, its own
 * (`<folder>/map.browser.js`) or shared (`lib/web/browser/api_client.browser.js`),
 * is served beside it by its name without `.browser` (`map.js`,
 * `api_client.js`), its imports written to match, so that a page loads
 * its modules under its own path and two pages serve a shared module as
 * the same bytes. A page's module may import a domain of the library too,
 * by its `mod.js` (`lib/sync_client/mod.js`, a domain that runs on `fetch`
 * alone: `npm run graph` checks which): that module and the modules of its
 * domain it imports are served as `<domain>.<name>.js`
 * (`sync_client.mod.js`, `sync_client.create_sync_client.js`); a domain's
 * module imports only modules of its own domain. Installed, the modules are
 * the files the build put beside the HTML (and the library's own modules, for
 * a domain); in a checkout they are read from `scripts`, compiled once per
 * process (as the services that serve pages start: see {@linkcode pageRoutes},
 * which loads its page then), never per request.
 * @param dir the page's folder under the library, e.g. `new URL("./portal/", import.meta.url)`
 * @param name the page's file name without extension, e.g. `portal`
 * @param options where a checkout's compiled scripts come from; other files; shared stylesheets; the library's folder
 * @returns a function that loads the page, for {@linkcode pageRoutes}
 * @throws {TypeError} when a shared stylesheet's name is not a plain `.css` file name other than `<name>.css`
 * @throws {Error} (from the function) when a file is missing, a module imports what is not a page's module nor a domain of the library, or two modules would be served by one name
 */
export function pageLoader(
  dir: string | URL,
  name: string,
  options: PageLoaderOptions = {},
): () => Promise<WebPage> {
  const folder = typeof dir === "string" ? dir : fileURLToPath(dir);
  const scripts = options.scripts ?? PROCESS_SCRIPTS;
  const files = options.files ?? [];
  const styles = options.styles ?? [];
  for (const style of styles) {
    if (!/^[A-Za-z0-9_-]+\.css$/.test(style) || style === `${name}.css`) {
      throw new TypeError(
        `Cannot share the stylesheet "${style}": give a plain .css file name other than ${name}.css`,
      );
    }
  }
  return async () => {
    // Read here, not at import, for runtimes without a file path.
    const library = options.library === undefined
      ? fileURLToPath(new URL("../", import.meta.url))
      : typeof options.library === "string"
      ? options.library
      : fileURLToPath(options.library);
    const entry = join(folder, `${name}${BROWSER_JS}`);
    // Installed, the build's files; in a checkout, the compile is set off now, beside the reads.
    const compiled = existsSync(entry) ? undefined : scripts();
    compiled?.catch(() => undefined); // met below, once the files are read
    const [html, css, shared, others] = await Promise.all([
      readFile(join(folder, `${name}.html`), "utf8"),
      readFile(join(folder, `${name}.css`), "utf8"),
      Promise.all(styles.map((style) => readFile(join(library, "web", "browser", style), "utf8"))),
      Promise.all(files.map((file) => readFile(join(folder, file.name), "utf8"))),
    ]);
    const read = compiled === undefined
      ? (file: string) => readFile(file, "utf8")
      : compiledReader(await compiled, library);
    return {
      html,
      assets: [
        { name: `${name}.css`, contentType: CSS_TYPE, body: css },
        ...styles.map((style, index) => ({
          name: style,
          contentType: CSS_TYPE,
          body: shared[index]!,
        })),
        ...await pageModules(entry, `${name}.js`, read, library),
        ...files.map((file, index) => ({
          name: file.name,
          contentType: file.contentType,
          body: others[index]!,
        })),
      ],
    };
  };
}

/** Reads a module of the library (by its file path) from the compiled scripts. */
function compiledReader(
  scripts: CompiledScripts,
  library: string,
): (file: string) => Promise<string> {
  return (file) => {
    const path = relative(library, file).split(sep).join("/");
    const code = scripts.get(path);
    return code === undefined
      ? Promise.reject(
        new Error(`Cannot load the page's module ${path}: the compiled scripts do not hold it`),
      )
      : Promise.resolve(code);
  };
}

/**
 * A page's modules from its entry: each served by its name without
 * `.browser` (a domain's, as `<domain>.<name>.js`), its relative imports
 * written as those names, in the order they are first imported (the entry
 * first).
 */
async function pageModules(
  entry: string,
  entryName: string,
  read: (file: string) => Promise<string>,
  library: string,
): Promise<WebAsset[]> {
  const names = new Map<string, string>([[entry, entryName]]);
  const taken = new Map<string, string>([[entryName, entry]]);
  const pending = [entry];
  const modules: WebAsset[] = [];
  for (let file = pending.shift(); file !== undefined; file = pending.shift()) {
    const code = await read(file);
    const from = domainModule(library, file);
    const body = code.replace(IMPORT, (_whole, head: string, quote: string, specifier: string) => {
      if (!specifier.startsWith("./") && !specifier.startsWith("../")) {
        throw new Error(
          `Cannot serve the page's module ${
            basename(file)
          }: it imports "${specifier}", which is not a module of the library`,
        );
      }
      const target = resolve(dirname(file), specifier);
      let served = names.get(target);
      if (served === undefined) {
        served = servedName(file, specifier, target, from, domainModule(library, target));
        const other = taken.get(served);
        if (other !== undefined) {
          throw new Error(
            `Cannot serve the page's modules ${other} and ${target} both as ${served}: give one another name`,
          );
        }
        names.set(target, served);
        taken.set(served, target);
        pending.push(target);
      }
      return `${head}${quote}./${served}${quote}`;
    });
    modules.push({ name: names.get(file)!, contentType: JS_TYPE, body });
  }
  return modules;
}

/** A module of a domain of the library: the domain, and its path in the domain's folder. */
interface DomainModule {
  readonly domain: string;
  readonly path: readonly string[];
}

/** The domain a module is of, when it is no browser module and lies in a domain's folder of the library. */
function domainModule(library: string, file: string): DomainModule | undefined {
  if (file.endsWith(BROWSER_JS)) return undefined;
  const [domain, ...path] = relative(library, file).split(sep);
  if (domain === undefined || domain === ".." || domain === "" || path.length === 0) {
    return undefined;
  }
  return { domain, path };
}

/**
 * The name a module imported by `file` is served as: a browser module's by its
 * name without `.browser`; a domain's as `<domain>.<path, folders joined by .>`,
 * when a page's module imports the domain's `mod.js` or a module of the domain
 * imports another of its own.
 */
function servedName(
  file: string,
  specifier: string,
  target: string,
  from: DomainModule | undefined,
  to: DomainModule | undefined,
): string {
  const refuse = (why: string): never => {
    throw new Error(
      `Cannot serve the page's module ${basename(file)}: it imports "${specifier}", ${why}`,
    );
  };
  if (from === undefined) {
    if (target.endsWith(BROWSER_JS)) return `${basename(target).slice(0, -BROWSER_JS.length)}.js`;
    if (to?.path.join("/") === "mod.js") return [to.domain, ...to.path].join(".");
    return refuse("which is no browser module (*.browser.ts) nor a domain's mod.js");
  }
  if (to?.domain === from.domain) return [to.domain, ...to.path].join(".");
  return refuse(`which is not a module of its domain, ${from.domain}`);
}
