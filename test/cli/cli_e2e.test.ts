// The `tributary` program as an operator runs it (bin/tributary.mjs, a child
// process, from the checkout) against real servers on each backend: on
// memory, on Redis (two relay processes sharing it) and on PostgreSQL. A
// tenant and an OAuth client made by the CLI are what the server then
// accepts; endpoints made, listed and rotated by the CLI are what deliveries
// use, signed with the secrets the CLI printed; bad arguments and refused
// changes exit non-zero with a message.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AUTH_MIGRATIONS } from "../../lib/auth/postgres_auth_store.ts";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import { SYNC_MIGRATIONS } from "../../lib/sync/_postgres_sync_sql.ts";
import { postgresSkip, startPostgres, type TestPostgres } from "../_helpers/postgres.ts";
import { redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";
import { node24, node24Skip } from "../_helpers/runtimes.ts";
import { signedWith, SigningReceiver, until } from "../_helpers/relay_e2e.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const BIN = join(ROOT, "bin", "tributary.mjs");
const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

const coverage = process.env["NODE_V8_COVERAGE"] === undefined
  ? {}
  : { NODE_V8_COVERAGE: process.env["NODE_V8_COVERAGE"] };

/**
 * Runs the program with `args` over a bare environment (only PATH, HOME and `env`).
 * Asynchronous, so that this process's receiver keeps answering deliveries meanwhile.
 */
async function tributary(
  args: readonly string[],
  env: Record<string, string>,
  command: readonly string[] = [process.execPath, BIN],
): Promise<Run> {
  const child = spawn(command[0]!, [...command.slice(1), ...args], {
    cwd: ROOT,
    // Coverage goes on to a child of this Node when it is being measured (the CLI runs lib/ from the sources
    // through tsx, with its source maps); never to another Node, whose own type stripping has none, and whose
    // counts for the same files would be merged with these as if they were of the same code.
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      ...(command[0] === process.execPath ? coverage : { NODE_V8_COVERAGE: "" }),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const [code] = await once(child, "close") as [number | null];
  return { code, out, err };
}

/** The JSON a run printed, once it exited 0. */
async function ok(run: Promise<Run>): Promise<Record<string, unknown>> {
  const done = await run;
  assert.equal(done.code, 0, `exit ${done.code}:\n${done.out}\n${done.err}`);
  return JSON.parse(done.out) as Record<string, unknown>;
}

function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "tributary-cli-e2e-"));
  dirs.push(dir);
  return dir;
}

/** Posts an event as the tenant; gives the message id. */
async function post(url: string, key: string, event: string): Promise<string> {
  const response = await fetch(`${url}/webhook`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ event, data: { event } }),
  });
  const body = await response.json() as { id: string };
  assert.equal(response.status, 202, JSON.stringify(body));
  return body.id;
}

/** What a scenario leaves for more checks: the server, its files and the CLI's environment for it. */
interface Managed {
  readonly url: string;
  readonly started: Started;
  readonly serverEnv: Record<string, string>;
  readonly cliEnv: Record<string, string>;
  readonly receiverUrl: string;
}

/**
 * The operator's path on one backend: a tenant and a client added to their
 * files by the CLI, the server started on them, a token for the client's
 * secret, an endpoint added, listed and rotated through the CLI, and
 * deliveries signed with the secrets it printed.
 */
async function manage(
  receiver: SigningReceiver,
  backend: Record<string, string>,
): Promise<Managed> {
  const dir = workDir();
  const files = {
    TENANTS_FILE: join(dir, "tenants.json"),
    CLIENTS_FILE: join(dir, "clients.json"),
  };
  const tenant = await ok(tributary(["tenant", "add", "acme", "--json"], files));
  const key = tenant["api_key"] as string;
  const client = await ok(
    tributary([
      "client",
      "add",
      "backend",
      "--grant",
      "client_credentials",
      "--scope",
      "SignUp",
      "--json",
    ], files),
  );
  const secret = client["client_secret"] as string;

  const receiverUrl = await receiver.listen();
  const serverEnv = {
    SERVICES: "sync,relay",
    ...files,
    ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
    RETRY_SCHEDULE: "100ms",
    ...backend,
  };
  const started = startServer(serverEnv);
  const url = await listeningUrl(started);

  // The client's printed secret gets a token.
  const token = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`backend:${secret}`)}`,
    },
    body: "grant_type=client_credentials",
  });
  assert.equal(token.status, 200, await token.clone().text());
  assert.equal((await token.json() as { scope: string }).scope, "SignUp");

  const cliEnv = { ...files, TRIBUTARY_URL: url, TRIBUTARY_API_KEY: key };
  const added = await ok(
    tributary([
      "endpoint",
      "add",
      "--id",
      "orders",
      "--url",
      `${receiverUrl}/hook`,
      "--event",
      "order.*",
      "--json",
    ], cliEnv),
  );
  const first = added["secret"] as string;
  assert.match(first, /^whsec_/);
  const listed = await ok(tributary(["endpoint", "list", "--json"], cliEnv));
  assert.deepEqual(
    (listed["data"] as { id: string; url: string }[]).map((
      endpoint,
    ) => [endpoint.id, endpoint.url]),
    [["orders", `${receiverUrl}/hook`]],
  );

  const before = await receiver.delivery(await post(url, key, "order.created"), "/hook");
  assert.deepEqual(signedWith(before, [first]), [first]);

  const rotated = await ok(tributary(["endpoint", "rotate-secret", "orders", "--json"], cliEnv));
  const secrets = (rotated["secrets"] as { secret: string }[]).map((entry) => entry.secret);
  assert.equal(secrets.length, 2);
  assert.equal(secrets[1], first);
  const after = await receiver.delivery(await post(url, key, "order.paid"), "/hook");
  // The new secret signs, and the old one beside it for the overlap.
  assert.deepEqual(signedWith(after, secrets), secrets);

  const wrongKey = await tributary(["endpoint", "list"], {
    ...cliEnv,
    TRIBUTARY_API_KEY: "not-a-key",
  });
  assert.equal(wrongKey.code, 1);
  assert.match(
    wrongKey.err,
    /^tributary: The server at .* answered 401: Cannot authenticate the request/,
  );
  const unknown = await tributary(["endpoint", "rotate-secret", "nope"], cliEnv);
  assert.equal(unknown.code, 1);
  assert.match(unknown.err, /answered 404: Cannot find endpoint "nope"/);
  const taken = await tributary([
    "endpoint",
    "add",
    "--id",
    "orders",
    "--url",
    `${receiverUrl}/other`,
    "--event",
    "*",
    "--json",
  ], cliEnv);
  assert.equal(taken.code, 1);
  assert.equal((JSON.parse(taken.err) as { error: { code: string } }).error.code, "ERR_CLI_SERVER");
  assert.match(taken.err, /answered 409/);
  const refused = await tributary([
    "endpoint",
    "add",
    "--url",
    "http://10.0.0.1/hook",
    "--event",
    "*",
  ], cliEnv);
  assert.equal(refused.code, 1);
  assert.match(refused.err, /answered 400: Cannot use endpoint field "url"/);
  return { url, started, serverEnv, cliEnv, receiverUrl };
}

describe("tributary against a server on memory", { timeout: 120_000 }, () => {
  const receiver = new SigningReceiver();
  after(() => receiver.close());

  it("adds a tenant and a client the server accepts, and manages the tenant's endpoints", async () => {
    const { started } = await manage(receiver, {});
    started.child.kill("SIGTERM");
    await once(started.child, "exit");
  });

  it("exits 2 with a message on bad arguments", async () => {
    const cases = [
      { args: [], message: /^tributary: Cannot run: name a command\n/ },
      { args: ["nope"], message: /"nope": it is not a command/ },
      {
        args: ["endpoint", "add", "--url", "https://x.example"],
        message: /Cannot run endpoint add: give --event PATTERN/,
      },
      { args: ["endpoint", "list", "--verbose"], message: /--verbose is not one of its options/ },
      { args: ["tenant", "add"], message: /give <id>/ },
    ];
    for (const c of cases) {
      const run = await tributary(c.args, {});
      assert.equal(run.code, 2, c.args.join(" "));
      assert.equal(run.out, "");
      assert.match(run.err, c.message);
    }
  });

  it("checks the demo datasets without a server and hashes a key, from npx in the checkout", async () => {
    const checked = await ok(
      tributary(["data", "check", "--json"], {}, ["npx", "--offline", "tributary"]),
    );
    assert.equal(checked["ok"], true);
    assert.equal(checked["folder"], "data/datasets");
    const hashed = await ok(
      tributary(["key", "hash", "--json", "tributary-demo-key"], {}, [
        "npx",
        "--offline",
        "tributary",
      ]),
    );
    assert.equal(hashed["hash"], `sha256:${sha256Hex("tributary-demo-key")}`);
  });
});

describe("tributary from the checkout on Node 24", () => {
  it("runs the sources through Node's own type stripping", { skip: node24Skip }, async () => {
    assert.ok(node24 !== undefined, "REQUIRE_SERVICES=1 but Node 24 is not installed (NODE24_BIN)");
    const hashed = await ok(tributary(["key", "hash", "--json", "k"], {}, [node24, BIN]));
    assert.equal(hashed["hash"], `sha256:${sha256Hex("k")}`);
    const usage = await tributary(["key", "hash", "a", "b"], {}, [node24, BIN]);
    assert.equal(usage.code, 2);
    assert.match(usage.err, /"b" is one argument too many/);
  });
});

describe("tributary against relays on Redis", { skip: redisSkip, timeout: 120_000 }, () => {
  let redis: TestRedis;
  const receiver = new SigningReceiver();
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    receiver.close();
    await redis.stop();
  });

  it("manages endpoints through one relay process, and the other on the same Redis uses them", async () => {
    const backend = {
      STORAGE_TYPE: "redis",
      REDIS_URL: redis.url,
      REDIS_KEY_PREFIX: `{cli-${process.pid}}`,
    };
    const { url, started, serverEnv, cliEnv, receiverUrl } = await manage(receiver, backend);
    const second = startServer(serverEnv);
    const secondUrl = await listeningUrl(second);
    // The second process loaded what the CLI made through the first.
    const listed = await ok(
      tributary(["endpoint", "list", "--json"], { ...cliEnv, TRIBUTARY_URL: secondUrl }),
    );
    assert.deepEqual((listed["data"] as { id: string }[]).map((endpoint) => endpoint.id), [
      "orders",
    ]);
    // An endpoint made through the second is seen by the first, and delivers what the first accepts.
    const added = await ok(
      tributary([
        "endpoint",
        "add",
        "--id",
        "users",
        "--url",
        `${receiverUrl}/users`,
        "--event",
        "user.*",
        "--json",
      ], { ...cliEnv, TRIBUTARY_URL: secondUrl }),
    );
    const key = cliEnv["TRIBUTARY_API_KEY"]!;
    await until(async () => {
      const response = await fetch(`${url}/webhook/endpoints/users`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.arrayBuffer();
      return response.status === 200;
    });
    const delivery = await receiver.delivery(await post(url, key, "user.created"), "/users");
    assert.deepEqual(signedWith(delivery, [added["secret"] as string]), [added["secret"]]);
    for (const child of [started.child, second.child]) {
      child.kill("SIGTERM");
      await once(child, "exit");
    }
  });
});

describe(
  "tributary against a server on PostgreSQL",
  { skip: postgresSkip, timeout: 120_000 },
  () => {
    let postgres: TestPostgres;
    const receiver = new SigningReceiver();
    before(async () => {
      postgres = await startPostgres();
    });
    after(async () => {
      receiver.close();
      await postgres.stop();
    });

    it("migrates the schema the server then uses, and manages what the server accepts", async () => {
      const database = await postgres.database();
      const env = { DATABASE_URL: database };
      const pending = await tributary(["migrate", "--check", "--json"], env);
      assert.equal(pending.code, 1, pending.err);
      assert.deepEqual((JSON.parse(pending.out) as { schemas: unknown[] }).schemas, [
        { domain: "auth", applied: 0, pending: AUTH_MIGRATIONS.length, version: 0 },
        { domain: "sync", applied: 0, pending: SYNC_MIGRATIONS.length, version: 0 },
      ]);
      const applied = await ok(tributary(["migrate", "--json"], env));
      assert.deepEqual(applied["schemas"], [
        {
          domain: "auth",
          applied: AUTH_MIGRATIONS.length,
          pending: 0,
          version: AUTH_MIGRATIONS.length,
        },
        {
          domain: "sync",
          applied: SYNC_MIGRATIONS.length,
          pending: 0,
          version: SYNC_MIGRATIONS.length,
        },
      ]);
      const again = await tributary(["migrate"], env);
      assert.equal(again.code, 0, again.err);
      assert.match(
        again.out,
        /^Database postgres:\/\/.*:\nauth: up to date \(version \d+\)\nsync: up to date \(version \d+\)\n$/,
      );
      assert.equal((await tributary(["migrate", "--check"], env)).code, 0);

      // The server starts on the migrated schema (it finds nothing left to apply) and keeps the CLI's client's tokens there.
      const { started } = await manage(receiver, env);
      const { default: pg } = await import("pg");
      const client = new pg.Client({ connectionString: database });
      await client.connect();
      try {
        const { rows } = await client.query<{ count: string }>("SELECT count(*) FROM auth_tokens");
        assert.ok(Number(rows[0]!.count) >= 1);
        const versions = await client.query<{ count: string }>(
          "SELECT count(*) FROM tributary_migrations",
        );
        assert.equal(
          Number(versions.rows[0]!.count),
          AUTH_MIGRATIONS.length + SYNC_MIGRATIONS.length,
        );
      } finally {
        await client.end();
      }
      started.child.kill("SIGTERM");
      await once(started.child, "exit");
    });

    it("exits 1 naming DATABASE_URL when the database cannot be reached", async () => {
      const run = await tributary(["migrate"], {
        DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
      });
      assert.equal(run.code, 1);
      assert.match(
        run.err,
        /^tributary: Cannot reach PostgreSQL at postgres:\/\/nobody@127\.0\.0\.1:1\/none \(DATABASE_URL\)/,
      );
    });
  },
);
