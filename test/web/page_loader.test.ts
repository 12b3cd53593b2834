import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { createRouter } from "../../lib/http/mod.ts";
import { compileBrowserScripts } from "../../lib/web/compile_browser_scripts.ts";
import { type CompiledScripts, compileOnce } from "../../lib/web/compile_once.ts";
import { pageLoader, pageRoutes } from "../../lib/web/mod.ts";
import { bodyText, callHandler, makeRequest } from "../_helpers/http.ts";

const LIB = fileURLToPath(new URL("../../lib/", import.meta.url));
const PORTAL = join(LIB, "relay", "portal");
const EXPLORER = join(LIB, "water", "explorer");
const JS = "text/javascript; charset=utf-8";
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A folder as the build leaves one: files at their paths under it. */
function built(files: Readonly<Record<string, string>>): string {
  const dir = mkdtempSync(join(tmpdir(), "tributary-page-"));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(dir, path, ".."), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}

/** A page folder as the build leaves it: HTML, CSS and the compiled module side by side. */
function builtPage(): string {
  return built({
    "p.html": "<!doctype html><title>p</title>",
    "p.css": "body{margin:0}",
    "p.browser.js": "console.log(1);\n",
  });
}

/** Compiled scripts that count how often they are asked for. */
function countedScripts(scripts: CompiledScripts = new Map()) {
  let asked = 0;
  return { scripts: () => (asked++, Promise.resolve(scripts)), asked: () => asked };
}

describe("pageLoader()", () => {
  it("reads the HTML, the CSS and the module the build put beside them, asking for no compiled scripts", async () => {
    const { scripts, asked } = countedScripts();
    const page = await pageLoader(builtPage(), "p", { scripts })();
    assert.equal(asked(), 0);
    assert.equal(page.html, "<!doctype html><title>p</title>");
    assert.deepEqual(page.assets, [
      { name: "p.css", contentType: "text/css; charset=utf-8", body: "body{margin:0}" },
      { name: "p.js", contentType: JS, body: "console.log(1);\n" },
    ]);
  });

  it("serves the other files named, after the page's own, with their types", async () => {
    const dir = builtPage();
    writeFileSync(join(dir, "shapes.json"), '{"layers":[]}');
    const page = await pageLoader(dir, "p", {
      files: [{ name: "shapes.json", contentType: "application/json" }],
    })();
    assert.deepEqual(page.assets.map((asset) => [asset.name, asset.contentType, asset.body]), [
      ["p.css", "text/css; charset=utf-8", "body{margin:0}"],
      ["p.js", JS, "console.log(1);\n"],
      ["shapes.json", "application/json", '{"layers":[]}'],
    ]);
  });

  it("serves the shared stylesheets named, from the library's web/browser/, after the page's own", async () => {
    const dir = built({
      "lib/p/p.html": "",
      "lib/p/p.css": "p{}",
      "lib/p/p.browser.js": "",
      "lib/q/q.html": "",
      "lib/q/q.css": "q{}",
      "lib/q/q.browser.js": "",
      "lib/web/browser/page.css": "body{margin:0}",
    });
    const load = (name: string) =>
      pageLoader(join(dir, "lib", name), name, {
        library: join(dir, "lib"),
        styles: ["page.css"],
      })();
    const [p, q] = [await load("p"), await load("q")];
    assert.deepEqual(p.assets.map((asset) => [asset.name, asset.contentType, asset.body]), [
      ["p.css", "text/css; charset=utf-8", "p{}"],
      ["page.css", "text/css; charset=utf-8", "body{margin:0}"],
      ["p.js", JS, ""],
    ]);
    assert.deepEqual(q.assets[1], p.assets[1], "the same bytes beside each page");
  });

  it("refuses a shared stylesheet that is no plain .css name or is named as the page's own", () => {
    for (const style of ["p.css", "../page.css", "page.js", "a/page.css"]) {
      assert.throws(() => pageLoader(builtPage(), "p", { styles: [style] }), TypeError, style);
    }
  });

  it("fails when a file named is missing", async () => {
    await assert.rejects(
      pageLoader(builtPage(), "p", {
        files: [{ name: "none.json", contentType: "application/json" }],
      })(),
      { code: "ENOENT" },
    );
  });

  it("serves every module the page imports beside it, each once, by its name without .browser, its imports written to match", async () => {
    const root = built({
      "pages/p/p.html": "<p>",
      "pages/p/p.css": "p{}",
      "pages/p/p.browser.js": [
        `import { part } from "./part.browser.js";`,
        `import {`,
        `  client,`,
        `} from '../../shared/client.browser.js';`,
        `export * from "./part.browser.js";`,
        `// import { nothing } from "./nowhere.browser.js" (a comment: left alone)`,
        `const text = "from './quoted.browser.js'";`,
        `console.log(part, client, text);`,
        ``,
      ].join("\n"),
      "pages/p/part.browser.js":
        `import { client } from "../../shared/client.browser.js";\nexport const part = client + 1;\n`,
      "shared/client.browser.js": "export const client = 1;\n",
    });
    const page = await pageLoader(join(root, "pages", "p"), "p")();
    assert.deepEqual(page.assets.map((asset) => [asset.name, asset.contentType]), [
      ["p.css", "text/css; charset=utf-8"],
      ["p.js", JS],
      ["part.js", JS],
      ["client.js", JS],
    ]);
    const body = (name: string): string => page.assets.find((asset) => asset.name === name)!.body;
    assert.equal(
      body("p.js"),
      [
        `import { part } from "./part.js";`,
        `import {`,
        `  client,`,
        `} from './client.js';`,
        `export * from "./part.js";`,
        `// import { nothing } from "./nowhere.browser.js" (a comment: left alone)`,
        `const text = "from './quoted.browser.js'";`,
        `console.log(part, client, text);`,
        ``,
      ].join("\n"),
    );
    assert.equal(
      body("part.js"),
      `import { client } from "./client.js";\nexport const part = client + 1;\n`,
    );
    assert.equal(body("client.js"), "export const client = 1;\n");
  });

  it("refuses a module that imports a package, one that is no browser module, and two modules of one name", async () => {
    const page = (module: string, others: Readonly<Record<string, string>> = {}) =>
      pageLoader(built({ "p.html": "", "p.css": "", "p.browser.js": module, ...others }), "p")();
    await assert.rejects(
      page(`import { h } from "preact";\n`),
      /imports "preact", which is not a module of the library/,
    );
    await assert.rejects(
      page(`import { x } from "./x.js";\n`, { "x.js": "export const x = 1;\n" }),
      /imports "\.\/x\.js", which is no browser module/,
    );
    await assert.rejects(
      page(`import "./a/m.browser.js";\nimport "./b/m.browser.js";\n`, {
        "a/m.browser.js": "",
        "b/m.browser.js": "",
      }),
      /both as m\.js: give one another name/,
    );
  });

  it("serves a domain of the library the page imports by its mod.js, its modules as <domain>.<name>.js", async () => {
    const dir = built({
      "lib/p/p.html": "",
      "lib/p/p.css": "",
      "lib/p/p.browser.js": `import { x } from "../d/mod.js";\nconsole.log(x);\n`,
      "lib/d/mod.js": `export { x } from "./_x.js";\n`,
      "lib/d/_x.js": `import { y } from "./inner/y.js";\nexport const x = y;\n`,
      "lib/d/inner/y.js": "export const y = 1;\n",
    });
    const page = await pageLoader(join(dir, "lib", "p"), "p", { library: join(dir, "lib") })();
    assert.deepEqual(page.assets.map((asset) => [asset.name, asset.body]), [
      ["p.css", ""],
      ["p.js", `import { x } from "./d.mod.js";\nconsole.log(x);\n`],
      ["d.mod.js", `export { x } from "./d._x.js";\n`],
      ["d._x.js", `import { y } from "./d.inner.y.js";\nexport const x = y;\n`],
      ["d.inner.y.js", "export const y = 1;\n"],
    ]);
  });

  it("refuses a domain's module but its mod.js, and a domain's module that imports out of its domain", async () => {
    const page = (module: string, domain: Readonly<Record<string, string>> = {}) => {
      const dir = built({
        "lib/p/p.html": "",
        "lib/p/p.css": "",
        "lib/p/p.browser.js": module,
        "lib/p/q.browser.js": "",
        "lib/d/_x.js": "",
        "lib/e/mod.js": "",
        ...domain,
      });
      return pageLoader(join(dir, "lib", "p"), "p", { library: join(dir, "lib") })();
    };
    await assert.rejects(
      page(`import "../d/_x.js";\n`),
      /imports "\.\.\/d\/_x\.js", which is no browser module \(\*\.browser\.ts\) nor a domain's mod\.js/,
    );
    await assert.rejects(
      page(`import "../d/mod.js";\n`, { "lib/d/mod.js": `import "../e/mod.js";\n` }),
      /mod\.js: it imports "\.\.\/e\/mod\.js", which is not a module of its domain, d/,
    );
    await assert.rejects(
      page(`import "../d/mod.js";\n`, { "lib/d/mod.js": `import "../p/q.browser.js";\n` }),
      /which is not a module of its domain, d/,
    );
  });

  it("reads a checkout's modules from the compiled scripts, at their paths under lib/, and writes nothing beside the sources", async () => {
    const { scripts, asked } = countedScripts(
      new Map([
        [
          "relay/portal/portal.browser.js",
          `import { createApiClient } from "../../web/browser/api_client.browser.js";\ncreateApiClient;\n`,
        ],
        ["web/browser/api_client.browser.js", "export function createApiClient() {}\n"],
      ]),
    );
    const page = await pageLoader(new URL("../../lib/relay/portal/", import.meta.url), "portal", {
      scripts,
    })();
    assert.equal(asked(), 1);
    assert.deepEqual(page.assets.map((asset) => asset.name), [
      "portal.css",
      "portal.js",
      "api_client.js",
    ]);
    assert.equal(
      page.assets[1]!.body,
      `import { createApiClient } from "./api_client.js";\ncreateApiClient;\n`,
    );
    assert.equal(page.assets[2]!.body, "export function createApiClient() {}\n");
    assert.match(page.html, /\{\{page\}\}\/portal\.js/);
    assert.equal(
      existsSync(join(PORTAL, "portal.browser.js")),
      false,
      "nothing is written beside the sources",
    );
  });

  it("fails when the compiled scripts do, or do not hold a module the page imports", async () => {
    await assert.rejects(
      pageLoader(PORTAL, "portal", {
        scripts: () => Promise.reject(new Error("tsc exited with 2")),
      })(),
      /tsc exited with 2/,
    );
    const { scripts } = countedScripts(
      new Map([[
        "relay/portal/portal.browser.js",
        `import "../../web/browser/gone.browser.js";\n`,
      ]]),
    );
    await assert.rejects(
      pageLoader(PORTAL, "portal", { scripts })(),
      /web\/browser\/gone\.browser\.js: the compiled scripts do not hold it/,
    );
  });

  it("fails when the page has no HTML", async () => {
    await assert.rejects(pageLoader(builtPage(), "missing")(), { code: "ENOENT" });
  });

  it("compiles the explorer's and the portal's modules once, as their routes are made, never on a request; both serve the same client module", async () => {
    let compiles = 0;
    let requests = 0;
    let requestsBeforeCompile: number | undefined;
    const scripts = compileOnce(async (outDir, signal) => {
      compiles++;
      requestsBeforeCompile ??= requests;
      await compileBrowserScripts(outDir, { signal });
    });
    const routes = [
      ...pageRoutes(
        "/explorer",
        pageLoader(EXPLORER, "explorer", {
          scripts,
          files: [{ name: "basemap.json", contentType: "application/json" }],
        }),
      ),
      ...pageRoutes("/webhook/portal", pageLoader(PORTAL, "portal", { scripts })),
    ];
    assert.equal(compiles, 1, "the compile is set off as the routes are made");
    const router = createRouter(routes);
    const ask = async (path: string) => {
      requests++;
      const response = await callHandler(router, makeRequest({ path }));
      assert.equal(response.status, 200, path);
      return { body: await bodyText(response), etag: response.headers?.["etag"] };
    };
    const modules = [
      "explorer.js",
      "query.js",
      "map.js",
      "drawing.js",
      "plot.js",
      "table.js",
      "summary.js",
      "api_client.js",
    ];
    for (let round = 0; round < 5; round++) {
      await ask("/explorer");
      await ask("/webhook/portal");
      for (const module of modules) await ask(`/explorer/${module}`);
      await ask("/webhook/portal/portal.js");
    }
    assert.equal(compiles, 1, "however many requests");
    assert.equal(requestsBeforeCompile, 0, "before any request");
    // The shared client: one module, the same bytes (and tag) under each page's path, imported by both pages' modules.
    const [explorerClient, portalClient] = [
      await ask("/explorer/api_client.js"),
      await ask("/webhook/portal/api_client.js"),
    ];
    assert.equal(portalClient.body, explorerClient.body);
    assert.equal(portalClient.etag, explorerClient.etag);
    assert.match(explorerClient.body, /^export class ApiError extends Error\b/m);
    assert.match(explorerClient.body, /^export function createApiClient\(/m);
    assert.match(
      (await ask("/explorer/explorer.js")).body,
      /^import \{ ApiError, createApiClient \} from "\.\/api_client\.js";$/m,
    );
    assert.match(
      (await ask("/webhook/portal/portal.js")).body,
      /^import \{ ApiError, createApiClient \} from "\.\/api_client\.js";$/m,
    );
  });
});
