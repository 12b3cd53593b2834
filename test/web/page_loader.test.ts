import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { pageLoader } from "../../lib/web/mod.ts";

const PORTAL = fileURLToPath(new URL("../../lib/relay/portal/", import.meta.url));
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A page folder as the build leaves it: HTML, CSS and the compiled script side by side. */
function builtPage(): string {
  const dir = mkdtempSync(join(tmpdir(), "tributary-page-"));
  dirs.push(dir);
  writeFileSync(join(dir, "p.html"), "<!doctype html><title>p</title>");
  writeFileSync(join(dir, "p.css"), "body{margin:0}");
  writeFileSync(join(dir, "p.browser.js"), "console.log(1);\n");
  return dir;
}

describe("pageLoader()", () => {
  it("reads the HTML, the CSS and the script the build compiled, compiling nothing", async () => {
    let compiled = 0;
    const page = await pageLoader(builtPage(), "p", { compile: () => (compiled++, Promise.resolve()) })();
    assert.equal(compiled, 0);
    assert.equal(page.html, "<!doctype html><title>p</title>");
    assert.deepEqual(page.assets, [
      { name: "p.css", contentType: "text/css; charset=utf-8", body: "body{margin:0}" },
      { name: "p.js", contentType: "text/javascript; charset=utf-8", body: "console.log(1);\n" },
    ]);
  });

  it("serves the other files named, after the page's own, with their types", async () => {
    const dir = builtPage();
    writeFileSync(join(dir, "shapes.json"), '{"layers":[]}');
    const page = await pageLoader(dir, "p", { files: [{ name: "shapes.json", contentType: "application/json" }] })();
    assert.deepEqual(page.assets.map((asset) => [asset.name, asset.contentType, asset.body]), [
      ["p.css", "text/css; charset=utf-8", "body{margin:0}"],
      ["p.js", "text/javascript; charset=utf-8", "console.log(1);\n"],
      ["shapes.json", "application/json", '{"layers":[]}'],
    ]);
  });

  it("fails when a file named is missing", async () => {
    await assert.rejects(pageLoader(builtPage(), "p", { files: [{ name: "none.json", contentType: "application/json" }] })(), { code: "ENOENT" });
  });

  it("compiles the script where there is none, reads it at its path under lib/, and removes the compiler's folder", async () => {
    let into = "";
    const load = pageLoader(new URL("../../lib/relay/portal/", import.meta.url), "portal", {
      compile: async (outDir) => {
        into = outDir;
        await mkdir(join(outDir, "relay", "portal"), { recursive: true });
        await writeFile(join(outDir, "relay", "portal", "portal.browser.js"), "export {};\n");
      },
    });
    const page = await load();
    assert.equal(page.assets.find((asset) => asset.name === "portal.js")?.body, "export {};\n");
    assert.match(page.html, /\{\{page\}\}\/portal\.js/);
    assert.equal(existsSync(into), false, "the compiler's folder is removed");
    assert.equal(existsSync(join(PORTAL, "portal.browser.js")), false, "nothing is written beside the sources");
  });

  it("fails when the compiler does, and still removes its folder", async () => {
    let into = "";
    const load = pageLoader(PORTAL, "portal", {
      compile: (outDir) => {
        into = outDir;
        return Promise.reject(new Error("tsc exited with 2"));
      },
    });
    await assert.rejects(load(), /tsc exited with 2/);
    assert.equal(existsSync(into), false);
  });

  it("fails when the page has no HTML", async () => {
    await assert.rejects(pageLoader(builtPage(), "missing")(), { code: "ENOENT" });
  });
});
