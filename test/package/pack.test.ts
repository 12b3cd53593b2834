// The package as a user gets it: `npm pack`, the tarball installed into an
// empty project (no tsx, no redis, no kafkajs), then plain Node 20, tsc and
// Deno against what was installed, and the README's library examples run
// from there.
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { deno, denoSkip } from "../_helpers/runtimes.ts";
import { runExample } from "../_helpers/examples.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const TSC = join(ROOT, "node_modules", ".bin", "tsc");
const ENTRY_POINTS = ["", "/odata", "/water", "/auth", "/sync", "/relay", "/relay/redis", "/relay/kafka", "/http", "/crypto", "/metrics", "/config", "/storage", "/log", "/app"];

let project = "";
let tarball = "";

/** The environment of the package's processes: without coverage, which measures lib/ as the tests run it, not dist/. */
const ENV: NodeJS.ProcessEnv = { ...process.env, NODE_V8_COVERAGE: "" };

function run(command: string, args: readonly string[], cwd = project, env: NodeJS.ProcessEnv = ENV): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: "utf8", maxBuffer: 1 << 26 });
}

function ok(result: SpawnSyncReturns<string>, what: string): string {
  assert.equal(result.status, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** The TypeScript blocks of the README's "As a library" section. */
function libraryExamples(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("### As a library");
  const end = readme.indexOf("\n## ", start);
  return [...readme.slice(start, end).matchAll(/```ts\n([^]*?)```/g)].map((match) => match[1]!);
}

before(() => {
  const work = mkdtempSync(join(tmpdir(), "tributary-pack-"));
  const packed = ok(run("npm", ["pack", "--json", "--pack-destination", work], ROOT), "npm pack");
  const [info] = JSON.parse(packed.slice(packed.indexOf("["))) as { filename: string }[];
  tarball = join(work, info!.filename);
  project = join(work, "consumer");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  ok(run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, "@types/node@20"]), "npm install");
  // The examples read the demo data, as they would in a checkout.
  symlinkSync(join(ROOT, "data"), join(project, "data"));
});

describe("the packed package", () => {
  it("holds the built library, its documents and its licence, not the sources, tests, benchmarks or demo data", () => {
    const files = ok(run("tar", ["tzf", tarball], ROOT), "tar").trim().split("\n");
    for (const file of files) assert.match(file, /^package\/(dist\/.+\.(js|d\.ts|html|css)|dist\/water\/explorer\/basemap\.json|bin\/tributary\.mjs|package\.json|README\.md|LICENSE)$/, file);
    assert.ok(files.includes("package/dist/water/explorer/basemap.json"), "the explorer's map data");
    for (const page of ["relay/portal/portal", "water/explorer/explorer"]) {
      for (const extension of [".html", ".css", ".browser.js"]) assert.ok(files.includes(`package/dist/${page}${extension}`), `${page}${extension}`);
      assert.ok(!files.includes(`package/dist/${page}.browser.ts`), `${page}.browser.ts`);
    }
    for (const entry of ENTRY_POINTS) {
      const base = entry === "" ? "mod" : `${entry.slice(1)}/mod`;
      assert.ok(files.includes(`package/dist/${base}.js`) && files.includes(`package/dist/${base}.d.ts`), base);
    }
  });

  it("installs without tsx and without the optional redis and kafkajs", () => {
    for (const name of ["tsx", "redis", "kafkajs", "typescript"]) assert.equal(existsSync(join(project, "node_modules", name)), false, name);
    assert.ok(existsSync(join(project, "node_modules", "tributary", "dist", "mod.js")));
  });

  it("works from plain Node 20: flat and per-domain imports, a filter, a MemoryQueue and a TokenService", () => {
    writeFileSync(join(project, "plain.mjs"), `
import { parseFilter, bindFilter, evaluateFilter, MemoryQueue, TokenService, MemoryAuthStore, LoginThrottle, parseClients, pooledRandom } from "tributary";
import { parseFilter as parseFromOdata } from "tributary/odata";
import { MemoryQueue as QueueFromRelay } from "tributary/relay";
const filter = bindFilter(parseFilter("Depth gt 2 and Name eq 'x'"), new Map([["Depth", { type: "number" }], ["Name", { type: "string" }]]));
const row = { Depth: 3, Name: "x" };
const queue = new MemoryQueue({ capacity: 10 });
const tokens = new TokenService({
  store: new MemoryAuthStore(),
  clients: parseClients([{ client_id: "c", client_secret: "s", grant_types: ["client_credentials"], scopes: ["SignUp"] }]),
  now: Date.now, random: pooledRandom(), throttle: new LoginThrottle({ now: Date.now }),
});
const token = await tokens.token({ params: new Map([["grant_type", "client_credentials"], ["client_id", "c"], ["client_secret", "s"]]), basic: undefined, address: "127.0.0.1" });
console.log(JSON.stringify({
  same: parseFromOdata === parseFilter && QueueFromRelay === MemoryQueue,
  matches: evaluateFilter(filter, (name) => row[name] ?? null),
  depth: await queue.depth(Date.now()),
  scope: token.scope,
  verified: (await tokens.verifyAccess(token.access_token))?.clientId,
}));
`);
    const output = JSON.parse(ok(run(process.execPath, ["plain.mjs"]), "node plain.mjs")) as Record<string, unknown>;
    assert.deepEqual(output, { same: true, matches: true, depth: { ready: 0, delayed: 0, leased: 0, dead: 0 }, scope: "SignUp", verified: "c" });
  });

  it("serves the web pages from the files the build made, with no compiler installed", () => {
    writeFileSync(join(project, "pages.mjs"), `
import { createRelayService, MemoryQueue, TenantRegistry } from "tributary/relay";
import { createExplorerService } from "tributary/water";
const random = (size) => new Uint8Array(size);
const relay = createRelayService({ registry: new TenantRegistry({ now: Date.now, random }), queue: new MemoryQueue(), now: Date.now, random });
const explorer = createExplorerService({ mapTiles: undefined, mapTileAttribution: "" });
async function ask(handler, path) {
  const request = { method: "GET", path, query: "", headers: {}, remoteAddress: "127.0.0.1", origin: "http://localhost", signal: new AbortController().signal, body: { bytes: async () => new Uint8Array() } };
  const response = await handler(request);
  return [path, response.status, response.headers["content-type"], response.headers["content-security-policy"] !== undefined, String(response.body).length > 100];
}
console.log(JSON.stringify(await Promise.all([
  ask(relay, "/webhook/portal"), ask(relay, "/webhook/portal/portal.js"), ask(relay, "/webhook/portal/portal.css"),
  ask(explorer.handler, "/"), ask(explorer.handler, "/explorer/explorer.js"), ask(explorer.handler, "/explorer/basemap.json"),
])));
`);
    const html = "text/html; charset=utf-8";
    const js = "text/javascript; charset=utf-8";
    assert.deepEqual(JSON.parse(ok(run(process.execPath, ["pages.mjs"]), "node pages.mjs")), [
      ["/webhook/portal", 200, html, true, true],
      ["/webhook/portal/portal.js", 200, js, true, true],
      ["/webhook/portal/portal.css", 200, "text/css; charset=utf-8", true, true],
      ["/", 200, html, true, true],
      ["/explorer/explorer.js", 200, js, true, true],
      ["/explorer/basemap.json", 200, "application/json", true, true],
    ]);
  });

  it("runs the tributary command from plain Node, through npx and the installed bin", () => {
    const help = ok(run("npx", ["--offline", "tributary", "--help"]), "npx tributary --help");
    assert.match(help, /^Usage: tributary <command> \[options\]$/m);
    const bin = join(project, "node_modules", ".bin", "tributary");
    const hashed = ok(run(bin, ["key", "hash", "--json", "tributary-demo-key"]), "tributary key hash");
    assert.deepEqual(JSON.parse(hashed), { hash: `sha256:${createHash("sha256").update("tributary-demo-key").digest("hex")}` });
    const checked = JSON.parse(ok(run(bin, ["data", "check", "data/datasets", "--json"]), "tributary data check")) as { ok: boolean; datasets: unknown[] };
    assert.equal(checked.ok, true);
    assert.ok(checked.datasets.length > 0);
    const usage = run(bin, ["endpoint", "add"]);
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /Cannot run endpoint add: give --url URL/);
  });

  const internal = ["tributary/dist/odata/_kernels.js", "tributary/dist/odata/mod.js", "tributary/lib/odata/mod.ts", "tributary/odata/parse_filter"];
  for (const path of internal) {
    it(`refuses the internal path ${path}`, () => {
      const result = run(process.execPath, ["--input-type=module", "-e", `await import(${JSON.stringify(path)})`]);
      assert.notEqual(result.status, 0);
      assert.match(result.stderr, /ERR_PACKAGE_PATH_NOT_EXPORTED/);
    });
  }

  it("loads only the odata domain for tributary/odata", () => {
    writeFileSync(join(project, "hooks.mjs"), `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.includes("/node_modules/tributary/")) appendFileSync(process.env.LOADED_LOG, result.url + "\\n");
  return result;
}
`);
    writeFileSync(join(project, "register.mjs"), 'import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n');
    const log = join(project, "loaded.txt");
    ok(run(process.execPath, ["--import", "./register.mjs", "--input-type=module", "-e", 'await import("tributary/odata")'], project, { ...ENV, LOADED_LOG: log }), "import");
    const loaded = readFileSync(log, "utf8").trim().split("\n");
    assert.ok(loaded.length > 5, `${loaded.length} modules`);
    for (const url of loaded) assert.match(url, /\/node_modules\/tributary\/dist\/odata\/[^/]+\.js$/, url);
  });

  it("type-checks a TypeScript consumer against the shipped .d.ts with the settings of tsc --init", () => {
    writeConsumer();
    if (!existsSync(join(project, "tsconfig.json"))) ok(run(TSC, ["--init"]), "tsc --init");
    // A Node program lists Node's types (tsc --init leaves that to the user); the demo data's scripts are not ours to check.
    writeFileSync(join(project, "tsconfig.consumer.json"), JSON.stringify({
      extends: "./tsconfig.json",
      compilerOptions: { types: ["node"], noEmit: true },
      files: ["consumer.ts"],
    }));
    ok(run(TSC, ["-p", "tsconfig.consumer.json"]), "tsc with the tsc --init settings");
  });

  it("type-checks the same consumer with the DOM lib, skipLibCheck off and no types listed", () => {
    writeConsumer();
    writeFileSync(join(project, "tsconfig.strict.json"), JSON.stringify({
      compilerOptions: {
        module: "nodenext",
        target: "es2023",
        lib: ["es2023", "dom", "dom.iterable"],
        types: [],
        strict: true,
        exactOptionalPropertyTypes: true,
        noUncheckedIndexedAccess: true,
        skipLibCheck: false,
        noEmit: true,
      },
      files: ["consumer.ts"],
    }));
    ok(run(TSC, ["-p", "tsconfig.strict.json"]), "tsc with DOM and skipLibCheck off");
  });

  it("passes deno check on the installed entry points and on the sources", { skip: denoSkip }, () => {
    assert.ok(deno !== undefined, "REQUIRE_SERVICES=1 but Deno is not installed (DENO_BIN)");
    writeConsumer();
    ok(run(deno, ["check", "--quiet", "--no-config", "--node-modules-dir=manual", "consumer.ts"]), "deno check consumer.ts");
    const sources = ["lib/mod.ts", "lib/relay/redis/mod.ts", "lib/relay/kafka/mod.ts"];
    ok(run(deno, ["check", "--quiet", "--no-config", "--node-modules-dir=manual", ...sources], ROOT), "deno check lib");
  });

  it("runs every example of the README's library section from the installed package", async () => {
    const examples = libraryExamples();
    assert.ok(examples.length >= 4, `${examples.length} examples`);
    const dir = join(project, "examples");
    mkdirSync(dir, { recursive: true });
    examples.forEach((code, i) => writeFileSync(join(dir, `example_${i + 1}.ts`), code));
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: { module: "nodenext", target: "es2023", types: ["node"], strict: true, noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true, outDir: "out" },
      include: ["*.ts"],
    }));
    // Type-checked as written, then compiled to JavaScript and run by plain Node, from the project's folder.
    ok(run(TSC, ["-p", dir]), "tsc on the README's examples");
    for (const file of readdirSync(join(dir, "out")).filter((name) => name.endsWith(".js")).sort()) {
      await runExample(process.execPath, [join(dir, "out", file)], project, ENV);
    }
  });
});

function writeConsumer(): void {
  const imports = ENTRY_POINTS.map((entry, i) => `import * as entry${i} from "tributary${entry}";`).join("\n");
  writeFileSync(join(project, "consumer.ts"), `${imports}
import { parseFilter, createApp, readConfig, type App, type Config, type FilterNode, type RunningService } from "tributary";
import { openKafkaQueue } from "tributary/relay/kafka";
import { openRedisQueue } from "tributary/relay/redis";

const node: FilterNode = parseFilter("a eq 1");
const config: Config = readConfig({ SERVICES: "water" });
const app: App = createApp(config);
const services: readonly RunningService[] = [];
export const used = [${ENTRY_POINTS.map((_, i) => `entry${i}`).join(", ")}, node, app, services, openKafkaQueue, openRedisQueue];
`);
}
