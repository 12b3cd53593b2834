// The package as a user gets it: `npm pack`, the tarball installed into an
// empty project (no tsx, no redis, no kafkajs, no @types/node, no data/),
// then plain Node 20, tsc and Deno against what was installed, and the
// README's library examples run from there, each in a new folder of it.
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize } from "node:path";
import { before, describe, it } from "node:test";
import { deno, denoSkip } from "../_helpers/runtimes.ts";
import { runExample } from "../_helpers/examples.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const TSC = join(ROOT, "node_modules", ".bin", "tsc");
/** The pages' modules (each page's and the shared ones), by their path under lib/ without `.browser.ts`. */
const PAGE_MODULES = readdirSync(join(ROOT, "lib"), { recursive: true, encoding: "utf8" })
  .filter((entry) => entry.endsWith(".browser.ts"))
  .map((entry) => entry.split("\\").join("/").slice(0, -".browser.ts".length))
  .sort();
const ENTRY_POINTS = [
  "",
  "/odata",
  "/water",
  "/auth",
  "/sync",
  "/sync-client",
  "/relay",
  "/relay/redis",
  "/relay/kafka",
  "/http",
  "/crypto",
  "/metrics",
  "/config",
  "/storage",
  "/log",
  "/app",
];

/** The folder of an entry point under lib/ and dist/: `/sync-client` is `sync_client` (files are snake_case). */
function folderOf(entry: string): string {
  return entry.slice(1).replaceAll("-", "_");
}

/** The strict flags of the style guide that bear on a consumer's check, with TypeScript's default libs (which bring the DOM's `console`, `URL`, `Request`). */
const STRICT = {
  module: "nodenext",
  target: "es2023",
  lib: ["es2023", "dom", "dom.iterable"],
  strict: true,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noImplicitOverride: true,
  noImplicitReturns: true,
  noFallthroughCasesInSwitch: true,
  noPropertyAccessFromIndexSignature: true,
  noUnusedLocals: true,
  noUnusedParameters: true,
  useUnknownInCatchVariables: true,
  verbatimModuleSyntax: true,
  isolatedModules: true,
  noEmit: true,
} as const;

let work = "";
let project = "";
let tarball = "";
/** Node's types, installed beside the project rather than in it, for the checks of programs that use Node's own API. */
let nodeTypes = "";

/** The environment of the package's processes: without coverage, which measures lib/ as the tests run it, not dist/. */
const ENV: NodeJS.ProcessEnv = { ...process.env, NODE_V8_COVERAGE: "" };

function run(
  command: string,
  args: readonly string[],
  cwd = project,
  env: NodeJS.ProcessEnv = ENV,
): SpawnSyncReturns<string> {
  return spawnSync(command, args, { cwd, env, encoding: "utf8", maxBuffer: 1 << 26 });
}

function ok(result: SpawnSyncReturns<string>, what: string): string {
  assert.equal(result.status, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** A new folder inside the project (which resolves `tributary` from the project's node_modules), with no data/ and no var/. */
function newFolder(name: string): string {
  const folder = join(project, "runs", name);
  mkdirSync(folder, { recursive: true });
  return folder;
}

/** The TypeScript blocks of the README's "As a library" section. */
function libraryExamples(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("### As a library");
  const end = readme.indexOf("\n## ", start);
  return [...readme.slice(start, end).matchAll(/```ts\n([^]*?)```/g)].map((match) => match[1]!);
}

/** Whether an example is a program of Node's own API (`node:` modules, `process`), which type-checks only with Node's types. */
function usesNode(code: string): boolean {
  return /from "node:|\bprocess\b|\bBuffer\b/.test(code);
}

/** Every file under a folder, relative to it, with `/`. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .filter((entry) => statSync(join(dir, entry)).isFile())
    .map((entry) => entry.split("\\").join("/"));
}

before(() => {
  work = mkdtempSync(join(tmpdir(), "tributary-pack-"));
  const packed = ok(run("npm", ["pack", "--json", "--pack-destination", work], ROOT), "npm pack");
  const [info] = JSON.parse(packed.slice(packed.indexOf("["))) as { filename: string }[];
  tarball = join(work, info!.filename);
  project = join(work, "consumer");
  mkdirSync(project);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  ok(
    run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball]),
    "npm install",
  );
  nodeTypes = join(work, "node-types");
  mkdirSync(nodeTypes);
  writeFileSync(
    join(nodeTypes, "package.json"),
    JSON.stringify({ name: "node-types", private: true }),
  );
  ok(
    run(
      "npm",
      ["install", "--prefer-offline", "--no-audit", "--no-fund", "@types/node@20"],
      nodeTypes,
    ),
    "npm install @types/node",
  );
});

describe("the packed package", () => {
  it("holds the built library, its documents and its licence, not the sources, tests, benchmarks or demo data", () => {
    const files = ok(run("tar", ["tzf", tarball], ROOT), "tar").trim().split("\n");
    for (const file of files) {
      assert.match(
        file,
        /^package\/(dist\/.+\.(js|d\.ts|html|css)|dist\/water\/explorer\/basemap\.json|bin\/tributary\.mjs|package\.json|README\.md|LICENSE)$/,
        file,
      );
    }
    assert.ok(
      files.includes("package/dist/water/explorer/basemap.json"),
      "the explorer's map data",
    );
    for (
      const page of [
        "relay/portal/portal",
        "water/explorer/explorer",
        "accounts/playground/playground",
      ]
    ) {
      for (const extension of [".html", ".css"]) {
        assert.ok(files.includes(`package/dist/${page}${extension}`), `${page}${extension}`);
      }
    }
    assert.ok(files.includes("package/dist/web/browser/page.css"), "the pages' shared stylesheet");
    // Every module of the pages built, the shared client among them; no TypeScript.
    assert.ok(
      PAGE_MODULES.includes("web/browser/api_client") &&
        PAGE_MODULES.includes("water/explorer/map"),
      PAGE_MODULES.join(", "),
    );
    for (const module of PAGE_MODULES) {
      assert.ok(files.includes(`package/dist/${module}.browser.js`), `${module}.browser.js`);
      assert.ok(!files.includes(`package/dist/${module}.browser.ts`), `${module}.browser.ts`);
    }
    for (const entry of ENTRY_POINTS) {
      const base = entry === "" ? "mod" : `${folderOf(entry)}/mod`;
      assert.ok(
        files.includes(`package/dist/${base}.js`) && files.includes(`package/dist/${base}.d.ts`),
        base,
      );
    }
  });

  it("names no file it does not hold: imports, declarations' imports and references, source maps, package.json's entry points", () => {
    const unpacked = join(work, "unpacked");
    mkdirSync(unpacked, { recursive: true });
    ok(run("tar", ["xzf", tarball, "-C", unpacked], ROOT), "tar");
    const root = join(unpacked, "package");
    const files = new Set(filesUnder(root));
    const named: { from: string; name: string; file: string }[] = [];
    const refer = (from: string, name: string, file: string): void =>
      void named.push({ from, name, file: normalize(file).split("\\").join("/") });
    for (const file of files) {
      const here = dirname(file);
      const text = readFileSync(join(root, file), "utf8");
      if (/\.(m?js|d\.ts)$/.test(file)) {
        for (
          const match of text.matchAll(
            /(?:\bfrom\s*|\bimport\s*\(\s*|^import\s+)"(\.{1,2}\/[^"]+)"/gm,
          )
        ) {
          // A declaration's `./x.ts` or `./x.js` is the declaration `./x.d.ts`, as TypeScript resolves it.
          refer(
            file,
            match[1]!,
            join(
              here,
              file.endsWith(".d.ts") ? match[1]!.replace(/\.(ts|js)$/, ".d.ts") : match[1]!,
            ),
          );
        }
        for (const match of text.matchAll(/^\/\/\/\s*<reference\s+path="([^"]+)"/gm)) {
          refer(file, match[1]!, join(here, match[1]!));
        }
        // A reference to another package's types (Node's) names what the package does not hold either.
        for (const match of text.matchAll(/^\/\/\/\s*<reference\s+types="([^"]+)"/gm)) {
          refer(file, `types ${match[1]!}`, `node_modules/@types/${match[1]!}`);
        }
        for (const match of text.matchAll(/^\/\/# sourceMappingURL=(\S+)/gm)) {
          refer(file, match[1]!, join(here, match[1]!));
        }
      }
      if (file.endsWith(".map")) {
        const map = JSON.parse(text) as { sources?: string[]; sourceRoot?: string };
        for (const source of map.sources ?? []) {
          refer(file, source, join(here, map.sourceRoot ?? "", source));
        }
      }
    }
    const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
      types: string;
      bin: Record<string, string>;
      exports: Record<string, string | Record<string, string>>;
    };
    const targets = [
      manifest.types,
      ...Object.values(manifest.bin),
      ...Object.values(manifest.exports).flatMap((
        target,
      ) => (typeof target === "string" ? [target] : Object.values(target))),
    ];
    for (const target of targets) refer("package.json", target, target);
    assert.ok(named.length > 1000, `${named.length} names checked`);
    assert.deepEqual(
      named.filter((entry) => !files.has(entry.file)).map((entry) =>
        `${entry.from} names ${entry.name}`
      ),
      [],
    );
  });

  it("is MIT-licensed by the tributary authors, as package.json says", () => {
    const licence = ok(run("tar", ["xzOf", tarball, "package/LICENSE"], ROOT), "tar");
    assert.match(licence, /^MIT License\n\nCopyright \(c\) 2026 The tributary authors\n/);
    assert.match(licence, /THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND/);
    const manifest = JSON.parse(
      ok(run("tar", ["xzOf", tarball, "package/package.json"], ROOT), "tar"),
    ) as { license: string };
    assert.equal(manifest.license, "MIT");
  });

  it("installs without tsx, @types/node and the optional redis and kafkajs", () => {
    for (const name of ["tsx", "redis", "kafkajs", "typescript", "@types/node", "@types"]) {
      assert.equal(existsSync(join(project, "node_modules", name)), false, name);
    }
    assert.ok(existsSync(join(project, "node_modules", "tributary", "dist", "mod.js")));
  });

  it("works from plain Node 20: the root and per-domain imports, a filter, a MemoryQueue and a TokenService", () => {
    writeFileSync(
      join(project, "plain.mjs"),
      `
import { createApp as createFromRoot } from "tributary";
import { createApp } from "tributary/app";
import { parseFilter, bindFilter, evaluateFilter } from "tributary/odata";
import { MemoryQueue } from "tributary/relay";
import { TokenService, MemoryAuthStore, LoginThrottle, parseClients } from "tributary/auth";
import { pooledRandom } from "tributary/crypto";
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
  same: createFromRoot === createApp,
  matches: evaluateFilter(filter, (name) => row[name] ?? null),
  depth: await queue.depth(Date.now()),
  scope: token.scope,
  verified: (await tokens.verifyAccess(token.access_token))?.clientId,
}));
`,
    );
    const output = JSON.parse(ok(run(process.execPath, ["plain.mjs"]), "node plain.mjs")) as Record<
      string,
      unknown
    >;
    assert.deepEqual(output, {
      same: true,
      matches: true,
      depth: { ready: 0, delayed: 0, leased: 0, dead: 0 },
      scope: "SignUp",
      verified: "c",
    });
  });

  it("starts createApp(readConfig(process.env)) with the defaults in a new project: no datasets, API keys, clients or tenants, one log line each, and no var/ after start and close", () => {
    const folder = newFolder("defaults");
    writeFileSync(
      join(folder, "start.mjs"),
      `
import { createApp, readConfig } from "tributary";
const app = createApp(readConfig(process.env));
await app.start();
await app.close();
`,
    );
    const env = {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      NODE_V8_COVERAGE: "",
      LOG_FORMAT: "json",
    };
    const out = ok(run(process.execPath, ["start.mjs"], folder, env), "node start.mjs");
    const messages = out.trim().split("\n").map((line) =>
      (JSON.parse(line) as { msg: string }).msg
    );
    assert.deepEqual(messages.filter((message) => / no [a-zA-Z ]+: /.test(message)), [
      "Water data: no API keys: API_KEYS_FILE data/api_keys.json does not exist and API_KEYS is empty: every request that needs a key is refused (401) until one is set",
      "Water data: no datasets: DATA_DIR data/datasets does not exist; put datasets there and reload (SIGHUP)",
      "Token service: no OAuth clients: CLIENTS_FILE data/clients.json does not exist; add one with npx tributary client add",
      "Webhook relay: no tenants: TENANTS_FILE data/tenants.json does not exist; add one with npx tributary tenant add",
    ]);
    assert.deepEqual(readdirSync(folder), ["start.mjs"], "no var/, nothing written");
  });

  it("stops a start whose CLIENTS_FILE names a file that is not there, naming it, and leaves no var/", () => {
    const folder = newFolder("named-missing");
    writeFileSync(
      join(folder, "start.mjs"),
      `
import { createApp, readConfig } from "tributary";
const app = createApp(readConfig(process.env));
try {
  await app.start();
} catch (error) {
  console.log(JSON.stringify({ name: error.name, variable: error.variable, message: error.message }));
}
await app.close();
`,
    );
    const env = {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      NODE_V8_COVERAGE: "",
      LOG_LEVEL: "error",
      CLIENTS_FILE: "config/clients.json",
    };
    assert.deepEqual(
      JSON.parse(ok(run(process.execPath, ["start.mjs"], folder, env), "node start.mjs")),
      {
        name: "ConfigError",
        variable: "CLIENTS_FILE",
        message:
          "Cannot start: CLIENTS_FILE names config/clients.json, which cannot be read (ENOENT)",
      },
    );
    assert.deepEqual(readdirSync(folder), ["start.mjs"]);
  });

  it("serves the web pages from the files the build made, with no compiler installed", () => {
    writeFileSync(
      join(project, "pages.mjs"),
      `
import { createRelayService, MemoryQueue, TenantRegistry } from "tributary/relay";
import { createExplorerService } from "tributary/water";
const random = (size) => new Uint8Array(size);
const relay = createRelayService({ registry: new TenantRegistry({ now: Date.now, random }), queue: new MemoryQueue(), now: Date.now, random });
const explorer = createExplorerService({ mapTiles: undefined, mapTileAttribution: "" });
const bodies = {};
async function ask(handler, path) {
  const request = { method: "GET", path, query: "", headers: {}, remoteAddress: "127.0.0.1", origin: "http://localhost", signal: new AbortController().signal, body: { bytes: async () => new Uint8Array() } };
  const response = await handler(request);
  bodies[path] = String(response.body);
  return [path, response.status, response.headers["content-type"], response.headers["content-security-policy"] !== undefined, String(response.body).length > 100];
}
const answers = await Promise.all([
  ask(relay, "/webhook/portal"), ask(relay, "/webhook/portal/portal.js"), ask(relay, "/webhook/portal/api_client.js"), ask(relay, "/webhook/portal/portal.css"), ask(relay, "/webhook/portal/page.css"),
  ask(explorer.handler, "/"), ask(explorer.handler, "/explorer/explorer.js"), ask(explorer.handler, "/explorer/map.js"), ask(explorer.handler, "/explorer/api_client.js"), ask(explorer.handler, "/explorer/basemap.json"),
]);
const client = bodies["/webhook/portal/api_client.js"];
console.log(JSON.stringify({ answers, sameClient: client.includes("export function createApiClient(") && client === bodies["/explorer/api_client.js"] }));
`,
    );
    const html = "text/html; charset=utf-8";
    const js = "text/javascript; charset=utf-8";
    assert.deepEqual(JSON.parse(ok(run(process.execPath, ["pages.mjs"]), "node pages.mjs")), {
      answers: [
        ["/webhook/portal", 200, html, true, true],
        ["/webhook/portal/portal.js", 200, js, true, true],
        ["/webhook/portal/api_client.js", 200, js, true, true],
        ["/webhook/portal/portal.css", 200, "text/css; charset=utf-8", true, true],
        ["/webhook/portal/page.css", 200, "text/css; charset=utf-8", true, true],
        ["/", 200, html, true, true],
        ["/explorer/explorer.js", 200, js, true, true],
        ["/explorer/map.js", 200, js, true, true],
        ["/explorer/api_client.js", 200, js, true, true],
        ["/explorer/basemap.json", 200, "application/json", true, true],
      ],
      sameClient: true,
    });
  });

  it("runs the tributary command from plain Node, through npx and the installed bin", () => {
    const help = ok(run("npx", ["--offline", "tributary", "--help"]), "npx tributary --help");
    assert.match(help, /^Usage: tributary <command> \[options\]$/m);
    const bin = join(project, "node_modules", ".bin", "tributary");
    const hashed = ok(
      run(bin, ["key", "hash", "--json", "tributary-demo-key"]),
      "tributary key hash",
    );
    assert.deepEqual(JSON.parse(hashed), {
      hash: `sha256:${createHash("sha256").update("tributary-demo-key").digest("hex")}`,
    });
    const checked = JSON.parse(
      ok(
        run(bin, ["data", "check", join(ROOT, "data", "datasets"), "--json"]),
        "tributary data check",
      ),
    ) as { ok: boolean; datasets: unknown[] };
    assert.equal(checked.ok, true);
    assert.ok(checked.datasets.length > 0);
    const usage = run(bin, ["endpoint", "add"]);
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /Cannot run endpoint add: give --url URL/);
  });

  const internal = [
    "tributary/dist/columnar/_kernels.js",
    "tributary/dist/columnar/mod.js",
    "tributary/columnar",
    "tributary/dist/odata/mod.js",
    "tributary/lib/odata/mod.ts",
    "tributary/odata/parse_filter",
  ];
  for (const path of internal) {
    it(`refuses the internal path ${path}`, () => {
      const result = run(process.execPath, [
        "--input-type=module",
        "-e",
        `await import(${JSON.stringify(path)})`,
      ]);
      assert.notEqual(result.status, 0);
      assert.match(result.stderr, /ERR_PACKAGE_PATH_NOT_EXPORTED/);
    });
  }

  it("loads only the odata domain for tributary/odata", () => {
    writeFileSync(
      join(project, "hooks.mjs"),
      `
import { appendFileSync } from "node:fs";
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  if (result.url.includes("/node_modules/tributary/")) appendFileSync(process.env.LOADED_LOG, result.url + "\\n");
  return result;
}
`,
    );
    writeFileSync(
      join(project, "register.mjs"),
      'import { register } from "node:module";\nregister("./hooks.mjs", import.meta.url);\n',
    );
    const log = join(project, "loaded.txt");
    ok(
      run(
        process.execPath,
        [
          "--import",
          "./register.mjs",
          "--input-type=module",
          "-e",
          'await import("tributary/odata")',
        ],
        project,
        { ...ENV, LOADED_LOG: log },
      ),
      "import",
    );
    const loaded = readFileSync(log, "utf8").trim().split("\n");
    assert.ok(loaded.length > 5, `${loaded.length} modules`);
    for (const url of loaded) {
      assert.match(url, /\/node_modules\/tributary\/dist\/odata\/[^/]+\.js$/, url);
    }
  });

  it("type-checks a consumer and the README's examples that need no Node API, with the settings of tsc --init and no @types/node", () => {
    const folder = newFolder("tsc-init");
    const files = writeConsumer(folder);
    ok(run(TSC, ["--init"], folder), "tsc --init");
    // tsc --init lists no types; the file list is the consumer's own.
    writeFileSync(
      join(folder, "tsconfig.consumer.json"),
      JSON.stringify({ extends: "./tsconfig.json", compilerOptions: { noEmit: true }, files }),
    );
    ok(run(TSC, ["-p", "tsconfig.consumer.json"], folder), "tsc with the tsc --init settings");
  });

  for (const skipLibCheck of [false, true]) {
    it(`type-checks them with the style guide's strict flags, skipLibCheck ${skipLibCheck ? "on" : "off"} and no @types/node`, () => {
      const folder = newFolder(`strict-${skipLibCheck}`);
      const files = writeConsumer(folder);
      writeFileSync(
        join(folder, "tsconfig.json"),
        JSON.stringify({ compilerOptions: { ...STRICT, types: [], skipLibCheck }, files }),
      );
      ok(run(TSC, ["-p", "."], folder), "strict tsc without @types/node");
    });
  }

  it("type-checks a Node program with Node's types too: createNodeListener on node:http and node:http2, guardedLookup for http.request, decryptJwe with a KeyObject", () => {
    const folder = newFolder("with-node-types");
    const files = writeConsumer(folder);
    writeFileSync(
      join(folder, "node_program.ts"),
      `
import { generateKeyPairSync } from "node:crypto";
import { createServer, request } from "node:http";
import { createSecureServer } from "node:http2";
import { createNodeListener, type Handler } from "tributary/http";
import { createAddressPolicy, guardedLookup } from "tributary/relay";
import { decryptJwe, encryptJwe, parseRsaKey, pooledRandom } from "tributary/crypto";

export function serve(handler: Handler): void {
  createServer(createNodeListener(handler));
  createSecureServer({ allowHTTP1: true }, createNodeListener(handler));
  request("http://example.org/", { lookup: guardedLookup(createAddressPolicy()) });
}
const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwe = encryptJwe(new TextEncoder().encode("hi"), parseRsaKey(publicKey.export({ type: "spki", format: "pem" }).toString()), pooledRandom());
export const plain: Uint8Array = decryptJwe(jwe, privateKey);
`,
    );
    writeFileSync(
      join(folder, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          ...STRICT,
          lib: ["es2023"],
          types: ["node"],
          typeRoots: [join(nodeTypes, "node_modules", "@types")],
          skipLibCheck: false,
        },
        files: [...files, "node_program.ts"],
      }),
    );
    ok(run(TSC, ["-p", "."], folder), "strict tsc with @types/node");
  });

  it(
    "passes deno check on the installed entry points and on the sources",
    { skip: denoSkip },
    () => {
      assert.ok(deno !== undefined, "REQUIRE_SERVICES=1 but Deno is not installed (DENO_BIN)");
      const folder = newFolder("deno");
      const files = writeConsumer(folder);
      ok(
        run(
          deno,
          ["check", "--quiet", "--no-config", "--node-modules-dir=manual", ...files],
          folder,
        ),
        "deno check",
      );
      // Every entry point's source, and every _internal.ts the domains share.
      const sources = [
        ...ENTRY_POINTS.map((entry) =>
          entry === "" ? "lib/mod.ts" : `lib/${folderOf(entry)}/mod.ts`
        ),
        ...readdirSync(join(ROOT, "lib")).map((domain) => `lib/${domain}/_internal.ts`).filter((
          file,
        ) => existsSync(join(ROOT, file))),
      ];
      ok(
        run(
          deno,
          ["check", "--quiet", "--no-config", "--node-modules-dir=manual", ...sources],
          ROOT,
        ),
        "deno check lib",
      );
    },
  );

  it("runs every example of the README's library section as written, each in a new folder and beside the demo data", async () => {
    const examples = libraryExamples();
    assert.ok(examples.length >= 5, `${examples.length} examples`);
    const dir = newFolder("examples");
    examples.forEach((code, i) => writeFileSync(join(dir, `example_${i + 1}.ts`), code));
    // They are Node programs (some use node:http and process), checked with Node's types as such a program is.
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          ...STRICT,
          noEmit: false,
          lib: ["es2023"],
          types: ["node"],
          typeRoots: [join(nodeTypes, "node_modules", "@types")],
          skipLibCheck: false,
          outDir: "out",
        },
        include: ["*.ts"],
      }),
    );
    ok(run(TSC, ["-p", dir]), "tsc on the README's examples");
    const compiled = readdirSync(join(dir, "out")).filter((name) => name.endsWith(".js")).sort();
    assert.equal(compiled.length, examples.length);
    for (const file of compiled) {
      const fresh = newFolder(`fresh-${file}`);
      await runExample(process.execPath, [join(dir, "out", file)], fresh, ENV);
      const withData = newFolder(`with-data-${file}`);
      symlinkSync(join(ROOT, "data"), join(withData, "data"));
      await runExample(process.execPath, [join(dir, "out", file)], withData, ENV);
    }
  });
});

/**
 * Writes, into a folder of the project, a consumer that imports every entry
 * point and uses the README's library examples: those that need no Node API
 * as they are, and the calls of the others (the app, the water service on a
 * listener) without Node's own modules.
 * @returns the files to check
 */
function writeConsumer(folder: string): string[] {
  const imports = ENTRY_POINTS.map((entry, i) => `import * as entry${i} from "tributary${entry}";`)
    .join("\n");
  writeFileSync(
    join(folder, "consumer.ts"),
    `${imports}
import { createApp, readConfig, WATER_MODULE, type App, type Config, type RunningService } from "tributary";
import { formatDescription } from "tributary/app";
import { parseFilter, type FilterNode } from "tributary/odata";
import { createFetchHandler, createNodeListener, indexApiKeys, parseApiKey, type NodeListener } from "tributary/http";
import { openKafkaQueue } from "tributary/relay/kafka";
import { openRedisQueue } from "tributary/relay/redis";
import { createWaterService, loadDatasets } from "tributary/water";

const node: FilterNode = parseFilter("a eq 1");
const config: Config = readConfig({ SERVICES: "water" });
const app: App = createApp(config, { modules: [WATER_MODULE] });
const services: readonly RunningService[] = [];

export async function serveApp(): Promise<string[]> {
  const started = createApp(readConfig({ SERVICES: "sync", PORT: "0" }));
  await started.start();
  const { url } = await started.listen();
  const lines = formatDescription(started.describe(url));
  await started.close();
  return lines;
}

export async function waterListener(): Promise<{ node: NodeListener; fetch: (request: Request) => Promise<Response> }> {
  const { store } = await loadDatasets("data/datasets", { optionalFolder: true });
  const handler = createWaterService(store, { keys: indexApiKeys([parseApiKey("me", "my-secret-key")]), now: () => performance.now() });
  return { node: createNodeListener(handler), fetch: createFetchHandler(handler) };
}

export const used = [${
      ENTRY_POINTS.map((_, i) => `entry${i}`).join(", ")
    }, node, app, services, openKafkaQueue, openRedisQueue];
`,
  );
  const pure = libraryExamples().filter((code) => !usesNode(code));
  assert.ok(pure.length >= 3, `${pure.length} examples without Node's API`);
  // Each a module of its own, as written.
  const examples = pure.map((code, i) => {
    const file = `readme_example_${i + 1}.ts`;
    writeFileSync(join(folder, file), code);
    return file;
  });
  return ["consumer.ts", ...examples];
}
