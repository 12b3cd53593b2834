// The CLI's commands run in-process through runCli with the real file system
// (temporary folders) and a captured terminal: what they print, their exit
// codes, the files they write as the server reads them, and the requests the
// endpoint commands send. test/cli/cli_e2e.test.ts runs them against real servers.
import assert from "node:assert/strict";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { readClientsFile } from "../../lib/auth/mod.ts";
import { type CliIo } from "../../lib/cli/types.ts";
import { nodeCliIo } from "../../lib/cli/node_io.ts";
import { runCli } from "../../lib/cli/run_cli.ts";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import { parseApiKey, readApiKeysFile } from "../../lib/http/mod.ts";
import { readTenantsFile, TenantRegistry } from "../../lib/relay/mod.ts";
import { Journal } from "../../lib/storage/mod.ts";
import { formatCsvRow } from "../../lib/water/mod.ts";
import { FIXTURE_HEADER, fixtureRow } from "../_helpers/water.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const work = mkdtempSync(join(tmpdir(), "tributary-cli-"));
after(() => rmSync(work, { recursive: true, force: true }));
let folders = 0;

/** A fresh folder of this file's. */
function folder(): string {
  const dir = join(work, String(++folders));
  mkdirSync(dir);
  return dir;
}

interface Run {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

interface RunOptions {
  /** The environment: only this (the commands' files always name a temporary folder). */
  readonly env?: Record<string, string>;
  /** Standard input; undefined for a terminal. */
  readonly stdin?: string;
  readonly fetch?: CliIo["fetch"];
}

async function cli(argv: readonly string[], options: RunOptions = {}): Promise<Run> {
  let out = "";
  let err = "";
  const io: CliIo = {
    ...nodeCliIo(),
    env: options.env ?? {},
    out: (text) => void (out += text),
    err: (text) => void (err += text),
    stdin: () => Promise.resolve(options.stdin),
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  };
  const code = await runCli(argv, io);
  return { code, out, err };
}

function json(run: Run): Record<string, unknown> {
  assert.equal(run.err, "", run.err);
  return JSON.parse(run.out) as Record<string, unknown>;
}

describe("tributary key hash", () => {
  it("prints the form the server reads as the same key, from standard input", async () => {
    const run = await cli(["key", "hash"], { stdin: "my-secret-key\n" });
    assert.equal(run.code, 0);
    const printed = run.out.trim();
    assert.equal(printed, `sha256:${sha256Hex("my-secret-key")}`);
    // An API keys file holding the printed form accepts what the plain key hashes to.
    const { keys } = readApiKeysFile(
      JSON.stringify({ api_keys: [{ name: "n", key: printed }] }),
      "keys.json",
    );
    assert.equal(keys[0]!.hash, parseApiKey("n", "my-secret-key").hash);
  });

  it("hashes the argument, and answers JSON with --json", async () => {
    const run = await cli(["key", "hash", "--json", "abc"]);
    assert.deepEqual(json(run), { hash: `sha256:${sha256Hex("abc")}` });
  });

  it("trims the key as the server does", async () => {
    const a = await cli(["key", "hash"], { stdin: "  abc \r\n" });
    assert.equal(a.out.trim(), `sha256:${sha256Hex("abc")}`);
  });

  const refused = [
    {
      name: "no key and a terminal for input",
      argv: ["key", "hash"],
      stdin: undefined,
      message: /give the key on standard input/,
    },
    {
      name: "two keys on standard input",
      argv: ["key", "hash"],
      stdin: "a\nb\n",
      message: /holds 2 lines/,
    },
    { name: "an empty key", argv: ["key", "hash"], stdin: "\n", message: /the key is empty/ },
    {
      name: "a key already hashed",
      argv: ["key", "hash", `sha256:${"a".repeat(64)}`],
      stdin: undefined,
      message: /already in its sha256: form/,
    },
  ];
  for (const c of refused) {
    it(`exits 2 on ${c.name}`, async () => {
      const run = await cli(c.argv, c.stdin === undefined ? {} : { stdin: c.stdin });
      assert.equal(run.code, 2);
      assert.equal(run.out, "");
      assert.match(run.err, c.message);
      assert.match(run.err, /Run "tributary key hash --help" for the usage/);
    });
  }
});

describe("tributary client add", () => {
  it("makes CLIENTS_FILE with the client and prints its secret once; the file holds its hash", async () => {
    const file = join(folder(), "clients.json");
    const run = await cli([
      "client",
      "add",
      "backend",
      "--grant",
      "client_credentials",
      "--scope",
      "SignUp",
      "--json",
    ], { env: { CLIENTS_FILE: file } });
    assert.equal(run.code, 0);
    const answer = json(run);
    const secret = answer["client_secret"] as string;
    assert.match(secret, /^[0-9a-f]{64}$/);
    const text = readFileSync(file, "utf8");
    assert.ok(!text.includes(secret), "the plain secret is not in the file");
    const { clients } = readClientsFile(text, file);
    assert.equal(clients.length, 1);
    assert.equal(clients[0]!.id, "backend");
    assert.equal(clients[0]!.secretHash, sha256Hex(secret));
    assert.deepEqual([...clients[0]!.grantTypes], ["client_credentials"]);
    assert.deepEqual(clients[0]!.scopes, ["SignUp"]);
  });

  it("adds to an existing file, keeping its clients and its permissions", async () => {
    const file = join(folder(), "clients.json");
    copyFileSync(join(ROOT, "data", "clients.json"), file);
    chmodSync(file, 0o640);
    const run = await cli([
      "client",
      "add",
      "resource-server",
      "--grant",
      "client_credentials",
      "--permission",
      "introspect",
    ], { env: { CLIENTS_FILE: file } });
    assert.equal(run.code, 0, run.err);
    assert.match(
      run.out,
      /^Added client "resource-server" to .*; restart the server to use it\nclient_secret: [0-9a-f]{64}\n/,
    );
    const { clients, plain } = readClientsFile(readFileSync(file, "utf8"), file);
    assert.deepEqual(clients.map((client) => client.id), [
      "demo-backend",
      "demo-app",
      "resource-server",
    ]);
    assert.equal(plain.get("demo-backend"), "demo-backend-secret");
    assert.deepEqual([...clients[2]!.permissions], ["introspect"]);
    assert.equal(statSync(file).mode & 0o777, 0o640);
  });

  it("adds a public client without a secret, the grants given comma-separated", async () => {
    const file = join(folder(), "clients.json");
    const run = await cli([
      "client",
      "add",
      "phone",
      "--public",
      "--grant",
      "password,refresh_token",
      "--scope",
      "UserActivity",
      "--json",
    ], { env: { CLIENTS_FILE: file } });
    assert.equal(json(run)["client_secret"], null);
    const [client] = readClientsFile(readFileSync(file, "utf8"), file).clients;
    assert.equal(client!.secretHash, undefined);
    assert.deepEqual([...client!.grantTypes], ["password", "refresh_token"]);
  });

  it("prints the entry without writing with --print", async () => {
    const file = join(folder(), "clients.json");
    const run = await cli([
      "client",
      "add",
      "x",
      "--grant",
      "client_credentials",
      "--print",
      "--json",
    ], { env: { CLIENTS_FILE: file } });
    const answer = json(run);
    assert.deepEqual(
      (answer["entry"] as Record<string, unknown>)["client_secret"],
      `sha256:${sha256Hex(answer["client_secret"] as string)}`,
    );
    assert.throws(() => statSync(file), { code: "ENOENT" });
  });

  it("exits 1 and leaves the file alone when the id is taken", async () => {
    const file = join(folder(), "clients.json");
    copyFileSync(join(ROOT, "data", "clients.json"), file);
    const before = readFileSync(file, "utf8");
    const run = await cli([
      "client",
      "add",
      "demo-app",
      "--grant",
      "password",
      "--public",
      "--json",
    ], { env: { CLIENTS_FILE: file } });
    assert.equal(run.code, 1);
    assert.equal(run.out, "");
    assert.deepEqual(JSON.parse(run.err), {
      error: {
        code: "ERR_CLI_EXISTS",
        message: `Cannot add client "demo-app": ${file} has a client of that id`,
      },
    });
    assert.equal(readFileSync(file, "utf8"), before);
  });

  it("exits 1 naming CLIENTS_FILE when the file is one the server would refuse", async () => {
    const file = join(folder(), "clients.json");
    writeFileSync(file, '[{"client_id": 1}]');
    const run = await cli(["client", "add", "x", "--grant", "client_credentials"], {
      env: { CLIENTS_FILE: file },
    });
    assert.equal(run.code, 1);
    assert.match(run.err, /^tributary: .*clients\.json: Cannot read client 1: "client_id" must be/);
    assert.doesNotMatch(run.err, /Cannot start/);
  });

  const refused = [
    {
      name: "an unknown grant type",
      args: ["--grant", "implicit"],
      message: /"grant_types" must list some of client_credentials, password, refresh_token/,
    },
    {
      name: "an unknown scope",
      args: ["--grant", "client_credentials", "--scope", "Admin"],
      message: /"scopes" must list some of SignUp, UserActivity/,
    },
    {
      name: "client_credentials for a public client",
      args: ["--grant", "client_credentials", "--public"],
      message: /client_credentials needs a client_secret/,
    },
  ];
  for (const c of refused) {
    it(`exits 2 on ${c.name}, writing nothing`, async () => {
      const file = join(folder(), "clients.json");
      const run = await cli(["client", "add", "x", ...c.args], { env: { CLIENTS_FILE: file } });
      assert.equal(run.code, 2);
      assert.match(run.err, c.message);
      assert.throws(() => statSync(file), { code: "ENOENT" });
    });
  }
});

describe("tributary tenant add", () => {
  function registryOf(file: string): TenantRegistry {
    const registry = new TenantRegistry({ now: Date.now, random: nodeCliIo().random });
    readTenantsFile(registry, readFileSync(file, "utf8"), file);
    return registry;
  }

  it("makes TENANTS_FILE with the tenant; the printed key authenticates it and is not in the file", async () => {
    const file = join(folder(), "tenants.json");
    const run = await cli(["tenant", "add", "acme", "--json"], { env: { TENANTS_FILE: file } });
    assert.equal(run.code, 0);
    const key = json(run)["api_key"] as string;
    assert.match(key, /^[0-9a-f]{64}$/);
    assert.ok(!readFileSync(file, "utf8").includes(key));
    assert.equal(registryOf(file).authenticate(key)?.id, "acme");
  });

  it("adds to the demo file, keeping its tenants and endpoints", async () => {
    const file = join(folder(), "tenants.json");
    copyFileSync(join(ROOT, "data", "tenants.json"), file);
    const run = await cli(["tenant", "add", "initech"], { env: { TENANTS_FILE: file } });
    assert.equal(run.code, 0, run.err);
    const key = /^api_key: ([0-9a-f]{64})$/m.exec(run.out)![1]!;
    const registry = registryOf(file);
    assert.deepEqual(registry.tenants().map((tenant) => tenant.id), ["acme", "globex", "initech"]);
    assert.equal(registry.authenticate(key)?.id, "initech");
    assert.equal(registry.authenticate("demo-acme-key")?.id, "acme");
    assert.deepEqual(registry.endpoints("acme").map((endpoint) => endpoint.id), ["orders"]);
  });

  it("exits 1 when the tenant exists, 2 for an id the relay refuses", async () => {
    const file = join(folder(), "tenants.json");
    copyFileSync(join(ROOT, "data", "tenants.json"), file);
    const taken = await cli(["tenant", "add", "acme"], { env: { TENANTS_FILE: file } });
    assert.equal(taken.code, 1);
    assert.match(taken.err, /Cannot add tenant "acme": .* has a tenant of that id/);
    const bad = await cli(["tenant", "add", "a/b"], { env: { TENANTS_FILE: file } });
    assert.equal(bad.code, 2);
    assert.match(bad.err, /the id "a\/b" must be 1 to 64 letters/);
    assert.equal(
      readFileSync(file, "utf8"),
      readFileSync(join(ROOT, "data", "tenants.json"), "utf8"),
    );
  });

  it("prints the entry without writing with --print", async () => {
    const file = join(folder(), "tenants.json");
    const run = await cli(["tenant", "add", "acme", "--print"], { env: { TENANTS_FILE: file } });
    assert.equal(run.code, 0);
    assert.match(run.out, /"api_keys": \[\n\s+"sha256:[0-9a-f]{64}"/);
    assert.throws(() => statSync(file), { code: "ENOENT" });
  });
});

describe("tributary data check", () => {
  const HEADER = formatCsvRow(FIXTURE_HEADER);
  function dataset(dir: string, name: string, doi: string, csv: string): string {
    mkdirSync(join(dir, name));
    writeFileSync(
      join(dir, name, "metadata.json"),
      JSON.stringify({ DOI: doi, DatasetName: name }),
    );
    writeFileSync(join(dir, name, "data.csv"), csv);
    return join(dir, name);
  }
  const datasets = folder();
  const good = dataset(
    datasets,
    "good",
    "10.25976/good-aa01",
    HEADER + fixtureRow({}) + fixtureRow({ MonitoringLocationID: "L2" }),
  );
  const bad = dataset(
    datasets,
    "bad",
    "10.25976/badd-aa02",
    HEADER + fixtureRow({}) + fixtureRow({ ResultValue: "high" }) +
      fixtureRow({ ActivityStartDate: "2020-13-45" }) + fixtureRow({}),
  );
  mkdirSync(join(datasets, "broken"));
  writeFileSync(join(datasets, "broken", "metadata.json"), '{"DOI": ');
  const clean = folder();
  dataset(clean, "good", "10.25976/good-aa01", HEADER + fixtureRow({}));

  it("reports each bad row with file, line, column and field, and each dataset that would not load; exits 1", async () => {
    const run = await cli(["data", "check", datasets]);
    assert.equal(run.code, 1);
    const lines = run.out.trim().split("\n");
    assert.ok(
      lines.includes(`ok  good (10.25976/good-aa01): 2 observations, 2 locations`),
      run.out,
    );
    assert.ok(
      lines.includes(`BAD  bad (10.25976/badd-aa02): 2 observations, 1 location, 2 rows skipped`),
      run.out,
    );
    assert.ok(
      lines.includes(
        `  ${join(bad, "data.csv")}:3:24: found "high", which is not a number (ResultValue)`,
      ),
      run.out,
    );
    assert.ok(
      lines.some((line) =>
        line.startsWith(`  ${join(bad, "data.csv")}:4:`) && line.includes("2020-13-45") &&
        line.endsWith("(ActivityStartDate)")
      ),
      run.out,
    );
    assert.ok(
      lines.some((line) =>
        line.startsWith(`NOT LOADED  ${join(datasets, "broken", "metadata.json")}: `)
      ),
      run.out,
    );
    assert.equal(
      lines.at(-1),
      `2 datasets, 4 observations from ${datasets}: 2 rows would be skipped, 1 dataset would not load`,
    );
  });

  it("gives the same report as JSON", async () => {
    const run = await cli(["data", "check", datasets, "--json"]);
    assert.equal(run.code, 1);
    const report = json(run) as {
      ok: boolean;
      skippedRows: number;
      datasets: { folder: string; issues: { line: number; column: number; field?: string }[] }[];
      failures: unknown[];
    };
    assert.equal(report.ok, false);
    assert.equal(report.skippedRows, 2);
    const issues = report.datasets.find((entry) => entry.folder === "bad")!.issues;
    assert.deepEqual(issues.map((issue) => [issue.line, issue.field]), [[3, "ResultValue"], [
      4,
      "ActivityStartDate",
    ]]);
    assert.equal(issues[0]!.column, 24);
    assert.equal(report.failures.length, 1);
  });

  it("exits 0 for a datasets folder without problems, DATA_DIR by default", async () => {
    const run = await cli(["data", "check"], { env: { DATA_DIR: clean } });
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /1 dataset, 1 observation from .*: no problems\n$/);
  });

  it("checks one dataset's folder", async () => {
    const one = await cli(["data", "check", good]);
    assert.equal(one.code, 0, one.out);
    assert.match(one.out, /^ok {2}good \(10\.25976\/good-aa01\): 2 observations/);
    const other = await cli(["data", "check", bad, "--max-issues", "1"]);
    assert.equal(other.code, 1);
    assert.match(other.out, /:3:24: found "high"/);
    assert.match(other.out, /\.\.\. and 1 more row \(--max-issues\)/);
  });

  it("reports a dataset's folder whose data cannot be read", async () => {
    const dir = join(folder(), "lonely");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "metadata.json"),
      JSON.stringify({ DOI: "10.25976/lone-aa01", DatasetName: "Lonely" }),
    );
    const run = await cli(["data", "check", dir, "--json"]);
    assert.equal(run.code, 1);
    const report = json(run) as { failures: { file: string; message: string }[] };
    assert.equal(report.failures[0]!.file, join(dir, "data.csv"));
  });

  it("exits 1 for a folder that does not exist, 2 for a bad --max-issues", async () => {
    const missing = await cli(["data", "check", join(work, "missing")]);
    assert.equal(missing.code, 1);
    assert.match(missing.err, /Cannot read the datasets folder/);
    const usage = await cli(["data", "check", datasets, "--max-issues", "-1"]);
    assert.equal(usage.code, 2);
  });
});

describe("tributary endpoint (the requests it sends)", () => {
  interface Sent {
    readonly url: string;
    readonly init: RequestInit;
  }
  function server(status: number, body: unknown): { fetch: CliIo["fetch"]; sent: Sent[] } {
    const sent: Sent[] = [];
    return {
      sent,
      fetch: (url, init) => {
        sent.push({ url, init });
        return Promise.resolve(
          new Response(JSON.stringify(body), {
            status,
            headers: { "content-type": "application/json" },
          }),
        );
      },
    };
  }
  const endpoint = {
    id: "orders",
    url: "https://hooks.example/in",
    events: ["order.*"],
    enabled: true,
    disabled_reason: null,
  };

  it("lists through GET /webhook/endpoints on HOST and PORT, with the key of TRIBUTARY_API_KEY", async () => {
    const fake = server(200, {
      data: [endpoint, {
        ...endpoint,
        id: "old",
        enabled: false,
        disabled_reason: "the receiver answered 410",
      }],
    });
    const run = await cli(["endpoint", "list"], {
      env: { PORT: "8123", TRIBUTARY_API_KEY: "k1" },
      fetch: fake.fetch,
    });
    assert.equal(run.code, 0, run.err);
    assert.equal(fake.sent[0]!.url, "http://127.0.0.1:8123/webhook/endpoints");
    assert.equal(fake.sent[0]!.init.method, "GET");
    assert.equal(
      (fake.sent[0]!.init.headers as Record<string, string>)["authorization"],
      "Bearer k1",
    );
    assert.equal(
      run.out,
      "orders  enabled  https://hooks.example/in  order.*\nold  disabled (the receiver answered 410)  https://hooks.example/in  order.*\n",
    );
  });

  const addresses = [
    { env: { HOST: "0.0.0.0", PORT: "9000" }, url: "http://127.0.0.1:9000/webhook/endpoints" },
    { env: { HOST: "::", PORT: "9000" }, url: "http://[::1]:9000/webhook/endpoints" },
    { env: { HOST: "::1" }, url: "http://[::1]:8000/webhook/endpoints" },
    {
      env: { WEBHOOK_PORT: "9001", PORT: "9000", TLS_CERT_FILE: "cert.pem" },
      url: "https://127.0.0.1:9001/webhook/endpoints",
    },
    {
      env: { PORT: "9000", TRIBUTARY_URL: "https://relay.example.org/" },
      url: "https://relay.example.org/webhook/endpoints",
    },
  ];
  for (const c of addresses) {
    it(`calls ${c.url} with ${JSON.stringify(c.env)}`, async () => {
      const fake = server(200, { data: [] });
      const run = await cli(["endpoint", "list", "--api-key", "k"], {
        env: c.env,
        fetch: fake.fetch,
      });
      assert.equal(run.code, 0, run.err);
      assert.equal(fake.sent[0]!.url, c.url);
      assert.equal(run.out, "The tenant has no endpoints\n");
    });
  }

  it("adds through POST with the body the relay API reads", async () => {
    const dir = folder();
    writeFileSync(join(dir, "key.pem"), "-----BEGIN PUBLIC KEY-----\n...\n");
    const fake = server(201, { ...endpoint, secret: "whsec_abc" });
    const run = await cli([
      "endpoint",
      "add",
      "--server",
      "http://127.0.0.1:1",
      "--api-key",
      "k",
      "--url",
      "https://hooks.example/in",
      "--event",
      "order.*",
      "--event",
      "user.created,user.deleted",
      "--id",
      "orders",
      "--secret",
      "whsec_x",
      "--public-key-file",
      join(dir, "key.pem"),
      "--rate-limit",
      "2.5",
      "--disabled",
    ], { fetch: fake.fetch });
    assert.equal(run.code, 0, run.err);
    assert.equal(fake.sent[0]!.url, "http://127.0.0.1:1/webhook/endpoints");
    assert.equal(
      (fake.sent[0]!.init.headers as Record<string, string>)["content-type"],
      "application/json",
    );
    assert.deepEqual(JSON.parse(fake.sent[0]!.init.body as string), {
      url: "https://hooks.example/in",
      events: ["order.*", "user.created", "user.deleted"],
      id: "orders",
      secret: "whsec_x",
      public_key: "-----BEGIN PUBLIC KEY-----\n...\n",
      rate_limit_per_second: 2.5,
      enabled: false,
    });
    assert.equal(
      run.out,
      "Created endpoint orders for https://hooks.example/in (events: order.*)\nsecret: whsec_abc\n",
    );
  });

  it("rotates through POST .../rotate-secret, with no body unless a secret is given", async () => {
    const fake = server(200, {
      secrets: [{ secret: "whsec_new", expires_at: null }, {
        secret: "whsec_old",
        expires_at: "2030-01-01T00:00:00.000Z",
      }],
    });
    const run = await cli([
      "endpoint",
      "rotate-secret",
      "a b",
      "--server",
      "http://127.0.0.1:1",
      "--api-key",
      "k",
    ], { fetch: fake.fetch });
    assert.equal(run.code, 0, run.err);
    assert.equal(fake.sent[0]!.url, "http://127.0.0.1:1/webhook/endpoints/a%20b/rotate-secret");
    assert.equal(fake.sent[0]!.init.body, undefined);
    assert.equal(
      run.out,
      "New secret of endpoint a b: whsec_new\nOld secret whsec_old signs until 2030-01-01T00:00:00.000Z\n",
    );
  });

  it("exits 1 with the server's message when it answers an error", async () => {
    const fake = server(400, {
      error: { code: "BadRequest", message: "Cannot use the endpoint field url: it is required" },
    });
    const run = await cli([
      "endpoint",
      "add",
      "--server",
      "http://127.0.0.1:1",
      "--api-key",
      "k",
      "--url",
      "x",
      "--event",
      "*",
      "--json",
    ], { fetch: fake.fetch });
    assert.equal(run.code, 1);
    assert.deepEqual(JSON.parse(run.err), {
      error: {
        code: "ERR_CLI_SERVER",
        message:
          "The server at http://127.0.0.1:1 answered 400: Cannot use the endpoint field url: it is required",
      },
    });
  });

  it("exits 1 saying how to point it at the server when none answers", async () => {
    const fetch: CliIo["fetch"] = () =>
      Promise.reject(
        new TypeError("fetch failed", {
          cause: Object.assign(new Error("connect"), { code: "ECONNREFUSED" }),
        }),
      );
    const run = await cli(["endpoint", "list", "--api-key", "k"], { env: { PORT: "1" }, fetch });
    assert.equal(run.code, 1);
    assert.equal(
      run.err,
      "tributary: Cannot reach the server at http://127.0.0.1:1 (ECONNREFUSED): start it, or give its URL with --server or TRIBUTARY_URL\n",
    );
  });

  const refused = [
    {
      name: "no API key",
      argv: ["endpoint", "list"],
      env: {},
      message: /give the tenant's API key in TRIBUTARY_API_KEY or with --api-key/,
    },
    {
      name: "PORT 0 and no server URL",
      argv: ["endpoint", "list", "--api-key", "k"],
      env: { PORT: "0" },
      message: /PORT is 0/,
    },
    {
      name: "a --server that is not http",
      argv: ["endpoint", "list", "--api-key", "k", "--server", "ftp://x"],
      env: {},
      message: /--server must be an http or https URL/,
    },
    {
      name: "a --rate-limit that is not a number",
      argv: [
        "endpoint",
        "add",
        "--api-key",
        "k",
        "--url",
        "https://x.example",
        "--event",
        "*",
        "--rate-limit",
        "fast",
      ],
      env: {},
      message: /--rate-limit must be a number/,
    },
    {
      name: "a --public-key-file that does not exist",
      argv: [
        "endpoint",
        "add",
        "--api-key",
        "k",
        "--url",
        "https://x.example",
        "--event",
        "*",
        "--public-key-file",
        "/nonexistent.pem",
      ],
      env: {},
      message: /names \/nonexistent\.pem, which does not exist/,
    },
  ];
  for (const c of refused) {
    it(`exits 2 on ${c.name}, sending nothing`, async () => {
      const fake = server(200, {});
      const run = await cli(c.argv, { env: c.env, fetch: fake.fetch });
      assert.equal(run.code, 2);
      assert.match(run.err, c.message);
      assert.equal(fake.sent.length, 0);
    });
  }

  it("exits 1 naming the variable when TRIBUTARY_URL cannot be used", async () => {
    const run = await cli(["endpoint", "list", "--api-key", "k"], {
      env: { TRIBUTARY_URL: "relay.example.org" },
    });
    assert.equal(run.code, 1);
    assert.match(run.err, /^tributary: TRIBUTARY_URL must be an http or https URL/);
  });
});

describe("tributary migrate (without a database)", () => {
  it("exits 2 without DATABASE_URL", async () => {
    const run = await cli(["migrate"]);
    assert.equal(run.code, 2);
    assert.match(run.err, /set DATABASE_URL/);
  });

  it("exits 1 naming DATABASE_URL when it is not a PostgreSQL URL", async () => {
    const run = await cli(["migrate", "--json"], { env: { DATABASE_URL: "mysql://db/x" } });
    assert.equal(run.code, 1);
    const error = (JSON.parse(run.err) as { error: { code: string; message: string } }).error;
    assert.equal(error.code, "ERR_CONFIG_INVALID");
    assert.match(error.message, /^DATABASE_URL must be postgres:/);
  });
});

describe("runCli()", () => {
  it("prints the help on standard output and exits 0", async () => {
    const run = await cli(["--help"]);
    assert.equal(run.code, 0);
    assert.match(run.out, /^tributary: the admin command line/);
    assert.equal(run.err, "");
  });

  it("prints the help on standard error and exits 2 without a command", async () => {
    const run = await cli([]);
    assert.equal(run.code, 2);
    assert.equal(run.out, "");
    assert.match(
      run.err,
      /^tributary: Cannot run: name a command\n\ntributary: the admin command line/,
    );
  });

  it("answers a usage error as JSON with --json", async () => {
    const run = await cli(["endpoint", "add", "--json"]);
    assert.equal(run.code, 2);
    assert.deepEqual(JSON.parse(run.err), {
      error: { code: "ERR_CLI_USAGE", message: "Cannot run endpoint add: give --url URL" },
    });
  });
});

describe("tributary state check / state repair", () => {
  /** A state folder with a journal of 20 records, a bit flipped in its 5th. */
  async function damagedState(): Promise<string> {
    const dir = mkdtempSync(join(tmpdir(), "tributary-cli-state-"));
    const { journal } = await Journal.open({ dir, name: "sync" });
    for (let n = 0; n < 20; n++) journal.append({ n }).catch(() => {});
    await journal.close();
    const log = join(dir, "sync.00000001.log");
    const bytes = readFileSync(log);
    const fifth = bytes.indexOf('{"s":5,');
    bytes[fifth + 3] = bytes[fifth + 3]! ^ 1;
    writeFileSync(log, bytes);
    const { journal: whole } = await Journal.open({ dir, name: "auth" });
    await whole.append({ user: "ada" });
    await whole.close();
    return dir;
  }

  it("reports each journal and exits 1 for a damaged one, changing nothing", async () => {
    const dir = await damagedState();
    const before = readFileSync(join(dir, "sync.00000001.log"));
    const run = await cli(["state", "check"], { env: { STATE_DIR: dir } });
    assert.equal(run.code, 1);
    assert.match(run.out, /^ok +auth: 1 whole record$/m);
    assert.match(
      run.out,
      /^DAMAGED +sync: 19 whole records a repair keeps\n {2}.*sync\.00000001\.log at byte \d+ \(\d+ bytes\): a record's checksum does not match; 15 whole records after it$/m,
    );
    assert.match(
      run.out,
      /2 journals, 1 damaged: stop the server and run `npx tributary state repair`/,
    );
    assert.deepEqual(readFileSync(join(dir, "sync.00000001.log")), before);
    const report = json(await cli(["state", "check", dir, "--json"]));
    assert.deepEqual(
      (report["journals"] as { name: string; status: string }[]).map((j) => [j.name, j.status]),
      [["auth", "whole"], ["sync", "damaged"]],
    );
  });

  it("repairs keeping every whole record, and the journal opens again", async () => {
    const dir = await damagedState();
    const run = await cli(["state", "repair"], { env: { STATE_DIR: dir } });
    assert.equal(run.code, 0, run.err);
    assert.match(run.out, /^REPAIRED sync: 19 whole records kept$/m);
    assert.match(run.out, /moved aside: .*sync\.00000001\.log\.damaged-\d{8}T\d{6}Z/);
    assert.match(run.out, /1 of 2 journals repaired/);
    const { journal, replay } = await Journal.open({ dir, name: "sync" });
    await journal.close();
    assert.deepEqual(replay.records.map((record) => (record as { n: number }).n), [
      0,
      1,
      2,
      3,
      5,
      6,
      7,
      8,
      9,
      10,
      11,
      12,
      13,
      14,
      15,
      16,
      17,
      18,
      19,
    ]);
    assert.equal((await cli(["state", "check"], { env: { STATE_DIR: dir } })).code, 0);
  });

  it("refuses without a folder, and with a folder that is not there", async () => {
    assert.match(
      (await cli(["state", "check"], { env: { STATE_DIR: "" } })).err,
      /STATE_DIR is empty/,
    );
    const missing = await cli(["state", "repair", join(tmpdir(), "tributary-no-such-state")]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /there is no folder/);
  });
});
