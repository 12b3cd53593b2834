import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { after, describe, it } from "node:test";
import { compileOnce } from "../../lib/web/compile_once.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "tributary-once-"));
after(() => rmSync(work, { recursive: true, force: true }));

/** A compile that writes two modules, one in a folder, and counts its runs and the folders it was given. */
function countingCompile() {
  const folders: string[] = [];
  const compile = async (outDir: string): Promise<void> => {
    folders.push(outDir);
    await mkdir(join(outDir, "web", "browser"), { recursive: true });
    await writeFile(join(outDir, "page.browser.js"), "export const page = 1;\n");
    await writeFile(
      join(outDir, "web", "browser", "client.browser.js"),
      "export const client = 2;\n",
    );
    await writeFile(join(outDir, "notes.txt"), "not a module");
  };
  return { compile, folders };
}

describe("compileOnce()", () => {
  it("compiles on the first call only, however many calls come at once or after", async () => {
    const { compile, folders } = countingCompile();
    const scripts = compileOnce(compile);
    const first = await Promise.all([scripts(), scripts(), scripts()]);
    const later = await scripts();
    assert.equal(folders.length, 1);
    assert.ok(first.every((each) => each === later), "the same scripts to every caller");
  });

  it("reads every .js file it compiled, by its path with / between folders, and removes the folder", async () => {
    const { compile, folders } = countingCompile();
    const scripts = await compileOnce(compile)();
    assert.deepEqual(
      new Map([...scripts].sort()),
      new Map([
        ["page.browser.js", "export const page = 1;\n"],
        ["web/browser/client.browser.js", "export const client = 2;\n"],
      ]),
    );
    assert.equal(existsSync(folders[0]!), false, "the compiler's folder is removed");
  });

  it("keeps a failure: every call meets it, and the compiler does not run again", async () => {
    let runs = 0;
    let into = "";
    const scripts = compileOnce((outDir) => {
      runs++;
      into = outDir;
      return Promise.reject(new Error("tsc exited with 2"));
    });
    await assert.rejects(scripts(), /tsc exited with 2/);
    await assert.rejects(scripts(), /tsc exited with 2/);
    assert.equal(runs, 1);
    assert.equal(existsSync(into), false);
  });

  it("makes its folder in the temporary folder it is given, named after its process", async () => {
    const tmp = join(work, "tmp-named");
    mkdirSync(tmp);
    const { compile, folders } = countingCompile();
    await compileOnce(compile, { tmp })();
    assert.equal(dirname(folders[0]!), tmp);
    assert.match(basename(folders[0]!), new RegExp(`^tributary-pages-${process.pid}-\\w+$`));
  });

  it("removes the folders of processes gone (killed mid-compile), never one of a live process or another name", async () => {
    const tmp = join(work, "tmp-orphans");
    mkdirSync(tmp);
    // A process that has exited: its pid names no process now.
    const gone = spawnSync(process.execPath, ["-e", ""]).pid!;
    const left = [
      `tributary-pages-${gone}-AbC123`,
      `tributary-pages-${process.pid}-XyZ789`,
      `tributary-pages-${process.ppid}-Par456`,
      "tributary-pages-notapid",
      "other-folder",
    ];
    for (const name of left) mkdirSync(join(tmp, name, "relay"), { recursive: true });
    await compileOnce(countingCompile().compile, { tmp })();
    assert.deepEqual(readdirSync(tmp).sort(), left.slice(1).sort());
  });

  it("stops the compiler and removes its folder when the process exits mid-compile", () => {
    // A process that sets a compile off and exits while it runs, as a server stopped at once does.
    const marker = join(work, "stopped.txt");
    const script = join(work, "exit.ts");
    writeFileSync(
      script,
      `
import { writeFileSync } from "node:fs";
import { compileOnce } from ${JSON.stringify(join(ROOT, "lib", "web", "compile_once.ts"))};
const scripts = compileOnce((outDir, signal) => {
  writeFileSync(${JSON.stringify(marker)}, outDir);
  signal.addEventListener("abort", () => writeFileSync(${
        JSON.stringify(marker)
      }, "stopped " + outDir));
  // The compiler still running, the process exits.
  setImmediate(() => process.exit(0));
  return new Promise(() => {});
});
void scripts();
`,
    );
    const run = spawnSync(process.execPath, ["--import", "tsx", script], {
      encoding: "utf8",
      env: { ...process.env, NODE_V8_COVERAGE: "" },
    });
    assert.equal(run.status, 0, run.stderr);
    const said = readFileSync(marker, "utf8");
    assert.match(said, /^stopped /, "the compile was told to stop");
    assert.equal(existsSync(said.slice("stopped ".length)), false, "its folder is removed");
  });
});
