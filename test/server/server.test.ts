import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { after, describe, it } from "node:test";

const ROOT = join(import.meta.dirname, "..", "..");

interface Started {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly errors: () => string;
}

const children: ChildProcess[] = [];
after(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
});

function start(env: Record<string, string>): Started {
  const child = spawn(process.execPath, ["--import", "tsx", "server.ts"], {
    cwd: ROOT,
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", PORT: "0", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return { child, output: () => out, errors: () => err };
}

/** Waits for the start-up banner, whose last line is the curl example. */
async function listeningUrl(started: Started): Promise<string> {
  for (;;) {
    const match = /listening on (http:\/\/\S+)[^]*Try: curl/.exec(started.output());
    if (match !== null) return match[1]!;
    if (started.child.exitCode !== null) throw new Error(`server exited: ${started.errors()}`);
    await once(started.child.stdout!, "data");
  }
}

describe("server.ts", () => {
  it("serves the demo data with the printed demo key and stops cleanly on SIGTERM", async () => {
    const started = start({});
    const url = await listeningUrl(started);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const key = /API key "demo": (\S+)/.exec(started.output())![1]!;
    const response = await fetch(`${url}/v1/odata/v4/Locations?$top=2&$select=Id,Name`, { headers: { "x-api-key": key } });
    assert.equal(response.status, 200);
    const body = await response.json() as { value: unknown[] };
    assert.equal(body.value.length, 2);
    assert.equal((await fetch(`${url}/health`)).status, 200);
    assert.equal((await fetch(`${url}/nowhere`)).status, 404);
    started.child.kill("SIGTERM");
    const [code] = await once(started.child, "exit");
    assert.equal(code, 0);
  });

  it("runs the sync service alone, without API keys, with the printed demo client", async () => {
    const started = start({ SERVICES: "sync", API_KEYS_FILE: "" });
    let url: string | undefined;
    while (url === undefined) {
      url = /listening on (http:\/\/\S+)[^]*Token endpoint/.exec(started.output())?.[1];
      if (url === undefined) {
        if (started.child.exitCode !== null) throw new Error(`server exited: ${started.errors()}`);
        await once(started.child.stdout!, "data");
      }
    }
    const secret = /OAuth client "demo-backend" \(secret (\S+)\)/.exec(started.output())![1]!;
    const response = await fetch(`${url}/oauth2/token`, {
      method: "POST",
      headers: { authorization: `Basic ${btoa(`demo-backend:${secret}`)}`, "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials",
    });
    assert.equal(response.status, 200);
    assert.equal((await response.json() as { scope: string }).scope, "SignUp");
    assert.equal((await fetch(`${url}/v1/odata/v4/Locations`)).status, 404, "no water service");
    assert.doesNotMatch(started.output(), /API key/);
    started.child.kill("SIGTERM");
    const [code] = await once(started.child, "exit");
    assert.equal(code, 0);
  });

  const bad = [
    { env: { PORT: "eighty" }, variable: "PORT" },
    { env: { WEBHOOK_PORT: "99999" }, variable: "WEBHOOK_PORT" },
    { env: { RATE_LIMIT_PER_SECOND: "fast" }, variable: "RATE_LIMIT_PER_SECOND" },
    { env: { CORS_ORIGINS: "app.example.org" }, variable: "CORS_ORIGINS" },
    { env: { SERVICES: "water,teleport" }, variable: "SERVICES" },
    { env: { API_KEYS_FILE: "/nonexistent/keys.json" }, variable: "API_KEYS_FILE" },
    { env: { DATA_DIR: "/nonexistent/datasets" }, variable: "/nonexistent/datasets" },
    { env: { CLIENTS_FILE: "/nonexistent/clients.json" }, variable: "CLIENTS_FILE" },
    { env: { PASSWORD_HASH_COST: "1000" }, variable: "PASSWORD_HASH_COST" },
  ] as const;
  for (const c of bad) {
    it(`stops with a message naming ${c.variable} and no stack trace`, async () => {
      const started = start(c.env);
      const [code] = await once(started.child, "exit");
      assert.equal(code, 1);
      assert.match(started.errors(), new RegExp(c.variable.replaceAll("/", "\\/")));
      assert.doesNotMatch(started.errors(), /\n\s+at /);
    });
  }
});
