// No secret in the server's log: every file and variable holding keys and
// secrets in plain text, each used by a request, in JSON and in readable
// lines, and what a broken file or setting makes it say as it stops. The
// demo data's credentials are shown to a person at a terminal only: a real
// one, a pseudo-terminal made by util-linux's `script`.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { logText, type Started, startServer } from "../_helpers/server.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const LISTENING = /tributary listening on (https?:\/\/[^\s"]+)/;

/** Plain secrets of every kind the server is given, each of its own, so that any one found in the log is named. */
function secrets() {
  const tag = randomBytes(4).toString("hex");
  return {
    fileApiKey: `file-api-key-${tag}`,
    envApiKey: `env-api-key-${tag}`,
    adminKey: `admin-key-${tag}`,
    clientSecret: `client-secret-${tag}`,
    tenantKey: `tenant-key-${tag}`,
    fileWebhookSecret: `whsec_${randomBytes(32).toString("base64")}`,
    apiWebhookSecret: `whsec_${randomBytes(32).toString("base64")}`,
    // A capability URL's path is its secret (as Slack's and Discord's are).
    capability: `capability-path-${tag}`,
  };
}

/** The files of `secrets`, written plainly, and the environment that names them. */
function filesOf(plain: ReturnType<typeof secrets>): Record<string, string> {
  const dir = mkdtempSync(join(tmpdir(), "tributary-secrets-"));
  mkdirSync(join(dir, "datasets"));
  writeFileSync(
    join(dir, "api_keys.json"),
    JSON.stringify({ api_keys: [{ name: "ops", key: plain.fileApiKey }] }),
  );
  writeFileSync(
    join(dir, "clients.json"),
    JSON.stringify([{
      client_id: "backend",
      client_secret: plain.clientSecret,
      grant_types: ["client_credentials"],
      scopes: ["SignUp"],
    }]),
  );
  writeFileSync(
    join(dir, "tenants.json"),
    JSON.stringify({
      tenants: [{
        id: "t1",
        api_keys: [plain.tenantKey],
        endpoints: [{
          id: "hook",
          url: `https://hooks.example.com/services/${plain.capability}`,
          events: ["*"],
          secret: plain.fileWebhookSecret,
        }],
      }],
    }),
  );
  return {
    API_KEYS_FILE: join(dir, "api_keys.json"),
    CLIENTS_FILE: join(dir, "clients.json"),
    TENANTS_FILE: join(dir, "tenants.json"),
    DATA_DIR: join(dir, "datasets"),
    API_KEYS: plain.envApiKey,
    ADMIN_API_KEYS: plain.adminKey,
    RATE_LIMIT_PER_SECOND: "0",
    // Nothing is delivered: the endpoints' hosts are not ours to reach.
    WORKER_CONCURRENCY: "0",
  };
}

/** Waits until `text()` matches `pattern`, reading as `child` writes; fails with the output when it exits first. */
async function waitFor(
  child: ChildProcess,
  text: () => string,
  pattern: RegExp,
): Promise<RegExpExecArray> {
  for (;;) {
    const found = pattern.exec(text());
    if (found !== null) return found;
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`exited before ${pattern}: ${text()}`);
    }
    const stop = new AbortController();
    await Promise.race([
      once(child.stdout!, "data", { signal: stop.signal }),
      once(child, "exit", { signal: stop.signal }),
    ]).catch(() => {});
    stop.abort();
  }
}

/**
 * Uses every secret of `plain` in a request, the way a client would.
 * @returns the secrets the server made on the way: the one rotate-secret gave
 */
async function useEverySecret(
  url: string,
  plain: ReturnType<typeof secrets>,
): Promise<Record<string, string>> {
  for (const key of [plain.fileApiKey, plain.envApiKey]) {
    assert.equal(
      (await fetch(`${url}/v1/odata/v4/Locations?$top=1`, { headers: { "x-api-key": key } }))
        .status,
      200,
    );
  }
  assert.equal(
    (await fetch(`${url}/admin/datasets/reload`, {
      method: "POST",
      headers: { authorization: `Bearer ${plain.adminKey}` },
    })).status,
    200,
  );
  const token = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers: {
      authorization: `Basic ${btoa(`backend:${plain.clientSecret}`)}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials&scope=SignUp",
  });
  assert.equal(token.status, 200);
  const tenant = { authorization: `Bearer ${plain.tenantKey}`, "content-type": "application/json" };
  assert.equal(
    (await fetch(`${url}/webhook`, {
      method: "POST",
      headers: tenant,
      body: JSON.stringify({ event: "a.b", data: {} }),
    })).status,
    202,
  );
  const made = await fetch(`${url}/webhook/endpoints`, {
    method: "POST",
    headers: tenant,
    body: JSON.stringify({
      id: "made",
      url: `https://hooks.example.com/in/${plain.capability}`,
      events: ["*"],
      secret: plain.apiWebhookSecret,
    }),
  });
  assert.equal(made.status, 201, await made.text());
  const rotated = await fetch(`${url}/webhook/endpoints/made/rotate-secret`, {
    method: "POST",
    headers: tenant,
  });
  assert.equal(rotated.status, 200);
  const fresh = (await rotated.json() as { secrets: { secret: string }[] }).secrets[0]!.secret;
  assert.match(fresh, /^whsec_/);
  assert.equal(
    (await fetch(`${url}/webhook/endpoints/hook/secret`, { headers: tenant })).status,
    200,
  );
  // A wrong key is a secret too (a user's mistyped one).
  assert.equal(
    (await fetch(`${url}/v1/odata/v4/Locations`, {
      headers: { "x-api-key": `${plain.fileApiKey}-typo` },
    })).status,
    403,
  );
  return { rotatedWebhookSecret: fresh };
}

/** Stops a started server and gives all it wrote. */
async function stopped(started: Started): Promise<string> {
  started.child.kill("SIGTERM");
  assert.equal((await once(started.child, "exit"))[0], 0);
  const { out, err } = started.raw();
  return `${out}${err}`;
}

function assertNoneOf(log: string, plain: Readonly<Record<string, string>>): void {
  for (const [name, value] of Object.entries(plain)) {
    assert.equal(log.includes(value), false, `the log holds ${name}`);
  }
}

describe("server.ts log", () => {
  for (const format of ["json", "pretty"] as const) {
    it(`holds no key or secret of its files or environment, used or not, with LOG_FORMAT=${format}`, async () => {
      const plain = secrets();
      const started = startServer({ ...filesOf(plain), LOG_FORMAT: format });
      const url = (await waitFor(started.child, () => started.raw().out, LISTENING))[1]!;
      const made = await useEverySecret(url, plain);
      const log = await stopped(started);
      assertNoneOf(log, { ...plain, ...made });
      if (format === "json") { for (const line of log.trim().split("\n")) JSON.parse(line); }
      // Where the plain credentials are, instead.
      const text = logText(log);
      assert.match(text, /API key "ops": see \S+api_keys\.json/);
      assert.match(text, /OAuth client "backend" secret \([^)]*\): see \S+clients\.json/);
      assert.match(text, /Relay tenant "t1" API key: see \S+tenants\.json/);
      assert.match(text, /Relay tenant "t1": hook -> https:\/\/hooks\.example\.com\/…/);
    });
  }

  it("with the demo data and standard output not a terminal, says where the demo credentials are and shows none", async () => {
    const started = startServer({ DATA_DIR: mkdtempSync(join(tmpdir(), "tributary-nodata-")) });
    await waitFor(started.child, () => started.raw().out, LISTENING);
    const log = await stopped(started);
    assertNoneOf(log, {
      api: "tributary-demo-key",
      client: "demo-backend-secret",
      acme: "demo-acme-key",
      globex: "demo-globex-key",
      whsec: "whsec_",
    });
    assert.match(logText(log), /API key "demo": see data\/api_keys\.json/);
    assert.match(logText(log), /Try: curl -H 'x-api-key: <from data\/api_keys\.json>'/);
  });

  const stops = [
    {
      name: "an API keys file that is not JSON",
      file: "api_keys.json",
      text: '{"api_keys": [{"name": "a", "key": unquoted-secret-5e1d}]}',
      env: (path: string) => ({ API_KEYS_FILE: path }),
      says: /api_keys\.json is not valid JSON: Unexpected character at line 1, column 36/,
      secret: "unquoted-secret-5e1d",
    },
    {
      name: "a clients file that is not JSON",
      file: "clients.json",
      text: '[{"client_id": "b", "client_secret": "cut-secret-9a0b", }]',
      env: (path: string) => ({ CLIENTS_FILE: path }),
      says:
        /clients\.json is not valid JSON: Expected double-quoted property name at line 1, column 57/,
      secret: "cut-secret-9a0b",
    },
    {
      name: "a tenants file that is not JSON",
      file: "tenants.json",
      text: '{"tenants": [{"id": "t", "api_keys": [tenant-secret-3c7f]}]}',
      env: (path: string) => ({ TENANTS_FILE: path }),
      says: /tenants\.json: it is not JSON \(Unexpected character at line 1, column 39\)/,
      secret: "tenant-secret-3c7f",
    },
    {
      name: "an API_KEYS entry that is neither plain nor a hash",
      file: undefined,
      text: "",
      env: () => ({ API_KEYS: "fine-key, sha256:hash-like-secret-77aa" }),
      says: /API_KEYS entry 2 must be keys/,
      secret: "hash-like-secret-77aa",
    },
  ] as const;
  for (const c of stops) {
    it(`stops on ${c.name}, saying where, quoting no secret`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-broken-"));
      const path = join(dir, c.file ?? "none");
      if (c.file !== undefined) writeFileSync(path, c.text);
      const started = startServer(c.env(path));
      const [code] = await once(started.child, "exit");
      assert.equal(code, 1);
      const { out, err } = started.raw();
      assert.match(err, c.says);
      assert.equal(`${out}${err}`.includes(c.secret), false, err);
    });
  }
});

describe("server.ts on a terminal", () => {
  const running: ChildProcess[] = [];
  after(() => {
    for (const child of running) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  });

  it("shows the demo data's credentials and a first request, and still no other secret", async () => {
    const plain = secrets();
    const files = filesOf(plain);
    // The demo files for the API keys and the clients; a tenants file of our own, and more keys in the environment.
    const env = {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      PORT: "0",
      STATE_DIR: "",
      TENANTS_FILE: files["TENANTS_FILE"]!,
      DATA_DIR: files["DATA_DIR"]!,
      API_KEYS: plain.envApiKey,
      ADMIN_API_KEYS: plain.adminKey,
      WORKER_CONCURRENCY: "0",
    };
    // util-linux's script runs the server on a pseudo-terminal and copies what it writes to its own output.
    const child = spawn("script", [
      "-qfec",
      `exec "${process.execPath}" --import tsx server.ts`,
      "/dev/null",
    ], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
    running.push(child);
    let written = "";
    child.stdout!.on("data", (chunk: Buffer) => (written += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (written += chunk.toString()));
    await waitFor(child, () => written, LISTENING);
    // The server runs in a session of its own, under script: it is stopped itself (a hang-up, when
    // script goes, only reloads its datasets), then script ends with it.
    const server = Number(
      readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, "utf8").trim().split(/\s+/)[0],
    );
    assert.ok(server > 0, "the server under script");
    process.kill(server, "SIGTERM");
    await once(child, "exit");
    // Readable lines, as a terminal gets them (LOG_FORMAT=auto).
    assert.doesNotMatch(written, /^\{"level"/m);
    assert.match(
      written,
      /API key "demo": tributary-demo-key \(the demo data's, from data\/api_keys\.json\)/,
    );
    assert.match(
      written,
      /Try: curl -H 'x-api-key: tributary-demo-key' 'http:\/\/127\.0\.0\.1:\d+\/v1\/odata\/v4\/Locations\?\$top=2'/,
    );
    assert.match(
      written,
      /OAuth client "demo-backend" secret \([^)]*\): demo-backend-secret \(the demo data's, from data\/clients\.json\)/,
    );
    assert.match(written, /Relay tenant "t1" API key: see \S+tenants\.json/);
    assertNoneOf(written, plain);
  });
});
