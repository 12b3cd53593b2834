// server.ts on Node 24 with its own type stripping (no tsx) and on Deno:
// start, one request per service, a clean exit on SIGTERM.
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { listeningLine } from "../_helpers/listening.ts";
import { deno, denoSkip, node24, node24Skip } from "../_helpers/runtimes.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const children: ChildProcess[] = [];
after(() => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

async function smoke(command: string, args: readonly string[], stateDir: string): Promise<void> {
  const child = spawn(command, args, {
    cwd: ROOT,
    // NODE_V8_COVERAGE empty: Node hands it on to children otherwise, and coverage of the sources run
    // without tsx's source maps would be merged into c8's figures for the same files.
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      PORT: "0",
      RATE_LIMIT_PER_SECOND: "0",
      NO_COLOR: "1",
      NODE_V8_COVERAGE: "",
      STATE_DIR: stateDir,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  let url: string | undefined;
  while ((url = listeningLine(out)) === undefined) {
    if (child.exitCode !== null) assert.fail(`${command} exited: ${err}`);
    await once(child.stdout!, "data");
  }
  const water = await fetch(`${url}/v1/odata/v4/Locations?$top=1&$select=Id`, {
    headers: { "x-api-key": "tributary-demo-key" },
  });
  assert.equal(water.status, 200, "water");
  assert.deepEqual(await water.json(), {
    "@odata.context": `${url}/v1/odata/v4/$metadata#Locations(Id)`,
    value: [{ Id: 1 }],
    "@odata.nextLink": `${url}/v1/odata/v4/Locations?$select=Id&$top=1&$skiptoken=Id:1`,
  });
  const token = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers: {
      authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
      "content-type": "application/x-www-form-urlencoded",
    },
    body: "grant_type=client_credentials",
  });
  assert.equal(token.status, 200, "token");
  assert.equal(((await token.json()) as { scope: string }).scope, "SignUp");
  const intake = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
    body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
  });
  assert.equal(intake.status, 202, "relay");
  assert.deepEqual(((await intake.json()) as { endpoints: string[] }).endpoints, ["orders"]);
  child.kill("SIGTERM");
  const [code] = await once(child, "exit");
  assert.equal(code, 0, err);
  assert.match(out, /SIGTERM: finishing requests in flight/);
  assert.ok(existsSync(join(stateDir, "auth.00000001.log")), "the journals live in STATE_DIR");
}

describe("server.ts on other runtimes", () => {
  it("runs on Node 24 natively (type stripping, no tsx): every service answers, SIGTERM exits 0", {
    skip: node24Skip,
  }, async () => {
    assert.ok(node24 !== undefined, "REQUIRE_SERVICES=1 but Node 24 is not installed (NODE24_BIN)");
    await smoke(node24, ["server.ts"], mkdtempSync(join(tmpdir(), "tributary-node24-")));
  });

  it(
    "runs on Deno with read, net, env and its state folder's write permissions only: every service answers, SIGTERM exits 0",
    { skip: denoSkip },
    async () => {
      assert.ok(deno !== undefined, "REQUIRE_SERVICES=1 but Deno is not installed (DENO_BIN)");
      const state = mkdtempSync(join(tmpdir(), "tributary-deno-"));
      await smoke(deno, [
        "run",
        "--quiet",
        "--allow-net=127.0.0.1",
        `--allow-read=${ROOT},${state}`,
        `--allow-write=${state}`,
        "--allow-env",
        "--allow-sys=hostname",
        "server.ts",
      ], state);
    },
  );
});
