// createApp in process: the composed services, their metrics, the start and
// the bounded, ordered close. No child process, no banner.
import assert from "node:assert/strict";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  ACCOUNTS_MODULE,
  type App,
  type AppOverrides,
  type Config,
  createApp,
  type Environment,
  readConfig,
  WATER_MODULE,
} from "../../lib/app/mod.ts";
import type { ConfigPath } from "../../lib/config/mod.ts";
import {
  createRouter,
  errorResponse,
  type HttpResponse,
  type ServiceLog,
} from "../../lib/http/mod.ts";
import { jsonResponse } from "../../lib/http/json_response.ts";
import { createLogger } from "../../lib/log/mod.ts";
import type { DeliveryRequest, DeliveryResult } from "../../lib/relay/mod.ts";
import { freePort } from "../_helpers/redis.ts";
import { makeRequest, requestFrom } from "../_helpers/http.ts";

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/** A log that keeps its lines, for assertions and a quiet test run. */
function memoryLog(): ServiceLog & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (message) => lines.push(message),
    error: (message) => lines.push(`error: ${message}`),
  };
}

function tenantsFile(): string {
  const dir = mkdtempSync(join(tmpdir(), "tributary-app-"));
  const file = join(dir, "tenants.json");
  writeFileSync(
    file,
    JSON.stringify({
      tenants: [{
        id: "acme",
        api_keys: ["acme-key"],
        endpoints: [{
          id: "orders",
          url: "http://127.0.0.1:9/hook",
          events: ["order.*"],
          secret: SECRET,
        }],
      }],
    }),
  );
  return file;
}

/** Deliveries the relay made, each answered when the test says so. */
class HeldDeliveries {
  readonly requests: DeliveryRequest[] = [];
  #release: (() => void)[] = [];
  #arrived: (() => void) | undefined;
  deliver = (request: DeliveryRequest): Promise<DeliveryResult> => {
    this.requests.push(request);
    this.#arrived?.();
    return new Promise((resolve) =>
      this.#release.push(() => resolve({ kind: "response", status: 204, retryAfter: undefined }))
    );
  };
  /** Resolves once a delivery has been asked for. */
  arrived(): Promise<void> {
    if (this.requests.length > 0) return Promise.resolve();
    return new Promise((resolve) => (this.#arrived = resolve));
  }
  releaseAll(): void {
    for (const release of this.#release.splice(0)) release();
  }
}

function build(env: Record<string, string>, overrides: AppOverrides = {}): App {
  const config = readConfig({
    STATE_DIR: "",
    PASSWORD_HASH_COST: "1024",
    RATE_LIMIT_PER_SECOND: "0",
    RATE_LIMIT_CONCURRENCY: "0",
    ...env,
  });
  return createApp(config, { log: memoryLog(), ...overrides });
}

async function json(response: Response): Promise<Record<string, unknown>> {
  return (await response.json()) as Record<string, unknown>;
}

describe("createApp()", () => {
  it("serves every service on one listener once started, and describes them", async () => {
    const held = new HeldDeliveries();
    const app = build({ TENANTS_FILE: tenantsFile() }, { deliver: held.deliver });
    await app.start();
    const { url } = await app.listen({ port: 0 });
    try {
      const water = await fetch(`${url}/v1/odata/v4/Locations?$top=2&$select=Id`, {
        headers: { "x-api-key": "tributary-demo-key" },
      });
      assert.equal(water.status, 200);
      assert.equal(((await json(water))["value"] as unknown[]).length, 2);

      const token = await fetch(`${url}/oauth2/token`, {
        method: "POST",
        headers: {
          authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: "grant_type=client_credentials",
      });
      assert.equal(token.status, 200);
      const signUp = await fetch(`${url}/api/v2/sign-up`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${String((await json(token))["access_token"])}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ username: "ada", password: "correct horse battery" }),
      });
      assert.equal(signUp.status, 201);
      const login = await fetch(`${url}/oauth2/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "client_id=demo-app&grant_type=password&username=ada&password=correct+horse+battery",
      });
      assert.equal(login.status, 200);
      const snapshot = await fetch(`${url}/api/v2/sync/user`, {
        headers: { authorization: `Bearer ${String((await json(login))["access_token"])}` },
      });
      assert.equal(snapshot.status, 200);
      assert.equal(
        ((await json(snapshot))["data"] as { objects: { me: { username: string } } }).objects.me
          .username,
        "ada",
      );

      const intake = await fetch(`${url}/webhook`, {
        method: "POST",
        headers: { authorization: "Bearer acme-key", "content-type": "application/json" },
        body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
      });
      assert.equal(intake.status, 202);
      await held.arrived();
      assert.equal(held.requests[0]!.url, "http://127.0.0.1:9/hook");
      held.releaseAll();

      assert.deepEqual(await json(await fetch(`${url}/health`)), {
        status: "ok",
        services: ["water", "sync", "relay"],
      });
      assert.equal((await fetch(`${url}/nowhere`)).status, 404);
      const explorer = await fetch(`${url}/`);
      assert.equal(explorer.status, 200, "the water-data explorer");
      assert.match(explorer.headers.get("content-type") ?? "", /^text\/html/);
      const described = app.describe(url);
      assert.deepEqual(described.endpoints.map((endpoint) => endpoint.label), [
        "Water data",
        "Water-data explorer",
        "Token endpoint",
        "Sign-up",
        "Sync API",
        "Sync playground",
        "Webhook intake",
        "Relay portal",
      ]);
      assert.ok(
        described.credentials.some((credential) => credential.value === "tributary-demo-key"),
      );
      assert.ok(described.credentials.some((credential) => credential.value === "acme-key"));
    } finally {
      await app.close();
    }
  });

  it("labels every request in /metrics by its service and the pattern of the route that answered", async () => {
    const app = build({ SERVICES: "sync,relay", TENANTS_FILE: tenantsFile() });
    await app.start();
    try {
      // A service's errors (the token service's refusal in the sync API, too) come back answered, with the statuses of every service's table.
      const refused = await app.handler(
        makeRequest({ method: "GET", path: "/api/v2/sync/user/since/not-a-uuid" }),
      );
      assert.deepEqual([
        refused.status,
        JSON.parse(String(refused.body)).error.code,
        refused.headers?.["www-authenticate"],
      ], [401, "ERR_AUTH_MISSING_TOKEN", 'Bearer realm="tributary"']);
      const unknown = await app.handler(
        makeRequest({
          method: "GET",
          path: "/webhook/messages/msg_1",
          headers: { authorization: "Bearer acme-key" },
        }),
      );
      assert.deepEqual([unknown.status, JSON.parse(String(unknown.body)).error.code], [
        404,
        "ERR_RELAY_UNKNOWN_MESSAGE",
      ]);
      // Without the water service there is no explorer at /.
      await assert.rejects(async () => app.handler(makeRequest({ method: "GET", path: "/" })), {
        code: "ERR_HTTP_NOT_FOUND",
      });
      const text = String(
        (await app.handler(makeRequest({ method: "GET", path: "/metrics" }))).body,
      );
      assert.match(
        text,
        /tributary_http_requests_total\{service="sync",route="\/api\/v2\/sync\/user\/since\/:revision",method="GET",status="401"\} 1/,
      );
      assert.match(
        text,
        /tributary_http_requests_total\{service="relay",route="\/webhook\/messages\/:id",method="GET",status="404"\} 1/,
      );
    } finally {
      await app.close();
    }
  });

  it("names each request in its access line by the service and route pattern that answered: a service's, the host's, or none", async () => {
    const lines: string[] = [];
    const app = build({ SERVICES: "sync,relay", TENANTS_FILE: tenantsFile() }, {
      log: createLogger({ write: (line) => lines.push(line), now: () => 0 }),
    });
    await app.start();
    try {
      const { url } = await app.listen({ port: 0, host: "127.0.0.1" });
      const statuses: number[] = [];
      for (
        const [path, headers] of [
          ["/api/v2/sync/user/since/not-a-uuid", {}],
          ["/webhook/messages/msg_1", { authorization: "Bearer acme-key" }],
          ["/health/live", {}],
          ["/nowhere", {}],
        ] as const
      ) {
        const response = await fetch(`${url}${path}`, { headers });
        await response.arrayBuffer();
        statuses.push(response.status);
      }
      assert.deepEqual(statuses, [401, 404, 200, 404]);
    } finally {
      await app.close();
    }
    const access = lines.map((line) => JSON.parse(line) as Record<string, unknown>).filter((
      record,
    ) => record["event"] === "request");
    assert.deepEqual(
      access.map((
        record,
      ) => [record["service"], record["route"], record["status"], "aborted" in record]),
      [
        ["sync", "/api/v2/sync/user/since/:revision", 401, false],
        ["relay", "/webhook/messages/:id", 404, false],
        ["host", "/health/live", 200, false],
        [undefined, "other", 404, false],
      ],
    );
  });

  it("puts a route added to a service in /metrics with its pattern, with no other file edited", async () => {
    const app = build({ SERVICES: "relay", TENANTS_FILE: tenantsFile() }, {
      services: [() =>
        Promise.resolve({
          name: "extra",
          prefixes: ["/extra"],
          handler: createRouter([{
            method: "GET",
            path: "/extra/items/:id",
            handler: (_request, params) => jsonResponse(200, { id: params["id"] }),
          }]),
          describe: () => ({ endpoints: [], credentials: [], notes: [] }),
          drain: () => Promise.resolve(),
          close: () => Promise.resolve(),
        })],
    });
    await app.start();
    try {
      const response = await app.handler(makeRequest({ method: "GET", path: "/extra/items/42" }));
      assert.equal(response.status, 200);
      const text = String(
        (await app.handler(makeRequest({ method: "GET", path: "/metrics" }))).body,
      );
      assert.match(
        text,
        /tributary_http_requests_total\{service="extra",route="\/extra\/items\/:id",method="GET",status="200"\} 1/,
      );
    } finally {
      await app.close();
    }
  });

  it("answers 503 with Retry-After before it has started and once it closes", async () => {
    const app = build({ SERVICES: "relay", TENANTS_FILE: tenantsFile() });
    const request = makeRequest({
      method: "GET",
      path: "/webhook/endpoints",
      headers: { authorization: "Bearer acme-key" },
    });
    await assert.rejects(async () => app.handler(request), {
      code: "ERR_HTTP_UNAVAILABLE",
      headers: { "retry-after": "1" },
    });
    assert.equal((await app.handler(makeRequest({ method: "GET", path: "/health" }))).status, 200);
    await app.start();
    assert.equal((await app.handler(request)).status, 200);
    await app.close();
    await assert.rejects(async () => app.handler(request), { code: "ERR_HTTP_UNAVAILABLE" });
  });

  it("drains a delivery in flight before it closes, and stops listening", async () => {
    const held = new HeldDeliveries();
    const app = build({ SERVICES: "relay", TENANTS_FILE: tenantsFile() }, {
      deliver: held.deliver,
    });
    await app.start();
    const { url } = await app.listen({ port: 0 });
    const intake = await fetch(`${url}/webhook`, {
      method: "POST",
      headers: { authorization: "Bearer acme-key", "content-type": "application/json" },
      body: JSON.stringify({ event: "order.paid", data: {} }),
    });
    assert.equal(intake.status, 202);
    await held.arrived();
    let closed = false;
    const closing = app.close().then(() => (closed = true));
    // The close waits for the delivery: a turn of the event loop later it has not finished.
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(closed, false);
    held.releaseAll();
    await closing;
    assert.equal(closed, true);
    await assert.rejects(fetch(`${url}/health`), "the listener is closed");
  });

  it("gives up a close that overruns closeTimeoutMs, naming it", async () => {
    const app = build({ SERVICES: "relay", TENANTS_FILE: tenantsFile() }, {
      closeTimeoutMs: 20,
      services: [() =>
        Promise.resolve({
          name: "stuck",
          prefixes: ["/stuck"],
          handler: createRouter([]),
          describe: () => ({ endpoints: [], credentials: [], notes: [] }),
          drain: () => new Promise<void>(() => {}),
          close: () => Promise.resolve(),
        })],
    });
    await app.start();
    await assert.rejects(app.close(), /Cannot stop cleanly within 20 ms/);
  });

  it("stops what it started when a later service cannot start, and names the variable", async () => {
    const port = await freePort();
    const log = memoryLog();
    const app = build({
      SERVICES: "sync,relay",
      STORAGE_TYPE: "redis",
      REDIS_URL: `redis://127.0.0.1:${port}`,
    }, { log });
    await assert.rejects(app.start(), { name: "ConfigError", variable: "REDIS_URL" });
    await assert.rejects(
      async () => app.handler(makeRequest({ method: "GET", path: "/api/v2/sync/user" })),
      { code: "ERR_HTTP_UNAVAILABLE" },
    );
    await assert.rejects(app.start(), { variable: "REDIS_URL" }, "a failed start stays failed");
    await app.close();
  });

  it("journals the memory queue in STATE_DIR: a message accepted before a restart is queued after it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-app-queue-"));
    const env = {
      SERVICES: "relay",
      TENANTS_FILE: tenantsFile(),
      STATE_DIR: dir,
      WORKER_CONCURRENCY: "0",
    };
    const first = build(env);
    await first.start();
    const accepted = await first.handler(makeRequest({
      method: "POST",
      path: "/webhook",
      headers: { authorization: "Bearer acme-key", "content-type": "application/json" },
      body: JSON.stringify({ event: "order.created", data: {} }),
    }));
    assert.equal(accepted.status, 202);
    assert.ok(
      first.describe("http://x").notes.includes(
        `Relay queue: in memory, journaled in ${dir} (each accepted message on disk before its 202)`,
      ),
    );
    await first.close();
    const second = build(env);
    await second.start();
    try {
      assert.ok(
        second.describe("http://x").notes.includes(
          "Relay queue: 1 job not yet delivered was restored from the journal",
        ),
        second.describe("http://x").notes.join("\n"),
      );
      const status = await second.handler(
        makeRequest({
          method: "GET",
          path: `/webhook/messages/${JSON.parse(accepted.body as string).id}`,
          headers: { authorization: "Bearer acme-key" },
        }),
      );
      assert.equal(status.status, 200);
    } finally {
      await second.close();
    }
  });

  it("journals the relay's endpoints in STATE_DIR: what the API made, changed and rotated survives a restart with the same TENANTS_FILE, and a job queued for it is delivered after", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-app-config-"));
    const tenants = tenantsFile();
    const env = {
      SERVICES: "relay",
      TENANTS_FILE: tenants,
      STATE_DIR: dir,
      ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
    };
    const auth = { authorization: "Bearer acme-key", "content-type": "application/json" };
    const call = (app: App, method: string, path: string, body?: unknown) =>
      app.handler(
        makeRequest({
          method,
          path,
          headers: auth,
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        }),
      );
    const first = build({ ...env, WORKER_CONCURRENCY: "0" });
    await first.start();
    assert.ok(
      first.describe("http://x").notes.includes(
        `Relay endpoints: journaled in ${dir}; 0 read, 1 of TENANTS_FILE written`,
      ),
      first.describe("http://x").notes.join("\n"),
    );
    const created = JSON.parse(
      (await call(first, "POST", "/webhook/endpoints", {
        id: "api",
        url: "http://127.0.0.1:9/api",
        events: ["invoice.*"],
      })).body as string,
    );
    assert.equal(
      (await call(first, "PATCH", "/webhook/endpoints/api", { url: "http://127.0.0.1:9/api-v2" }))
        .status,
      200,
    );
    assert.equal(
      (await call(first, "POST", "/webhook/endpoints/orders/rotate-secret", {})).status,
      200,
    );
    const secrets =
      JSON.parse((await call(first, "GET", "/webhook/endpoints/orders/secret")).body as string)
        .secrets;
    assert.equal(secrets.length, 2);
    const accepted = await call(first, "POST", "/webhook", {
      event: "invoice.paid",
      data: { n: 1 },
    });
    assert.deepEqual(JSON.parse(accepted.body as string).endpoints, ["api"]);
    await first.close();

    const held = new HeldDeliveries();
    const second = build(env, { deliver: held.deliver });
    await second.start();
    try {
      assert.ok(
        second.describe("http://x").notes.includes(
          `Relay endpoints: journaled in ${dir}; 2 read, 0 of TENANTS_FILE written, acme/orders changed through the API (TENANTS_FILE no longer sets them)`,
        ),
        second.describe("http://x").notes.join("\n"),
      );
      const api = JSON.parse((await call(second, "GET", "/webhook/endpoints/api")).body as string);
      assert.equal(api.url, "http://127.0.0.1:9/api-v2");
      assert.equal(api.created_at, created.created_at);
      assert.deepEqual(
        JSON.parse((await call(second, "GET", "/webhook/endpoints/orders/secret")).body as string)
          .secrets,
        secrets,
        "the rotated secret and the old one, with its expiry",
      );
      await held.arrived();
      assert.equal(
        held.requests[0]!.url,
        "http://127.0.0.1:9/api-v2",
        "the job queued before the restart went to the API's endpoint as changed",
      );
      held.releaseAll();
    } finally {
      await second.close();
    }
  });

  it("keeps the memory queue in memory only when STATE_DIR is empty, and says so", async () => {
    const app = build({
      SERVICES: "relay",
      TENANTS_FILE: tenantsFile(),
      STATE_DIR: "",
      WORKER_CONCURRENCY: "0",
    });
    await app.start();
    try {
      assert.ok(
        app.describe("http://x").notes.includes(
          "Relay queue: in memory only (STATE_DIR is empty): queued messages are lost at a restart",
        ),
      );
    } finally {
      await app.close();
    }
  });

  it("holds STATE_DIR once for the token and sync service and the relay, their journals side by side, and lets it go at close", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-app-state-"));
    const env = {
      SERVICES: "sync,relay",
      TENANTS_FILE: tenantsFile(),
      STATE_DIR: dir,
      WORKER_CONCURRENCY: "0",
    };
    const first = build(env);
    await first.start();
    assert.deepEqual(
      readdirSync(dir).sort(),
      [
        "LOCK.00000001",
        // Each journal: its log, and a snapshot naming it (a new journal's holds no state).
        ...["auth", "relay-config", "relay-queue", "sync"].flatMap((
          name,
        ) => [`${name}.00000001.log`, `${name}.snapshot`]),
      ].sort(),
    );
    assert.equal(JSON.parse(readFileSync(join(dir, "LOCK.00000001"), "utf8")).pid, process.pid);
    await first.close();
    assert.ok(
      !existsSync(join(dir, "LOCK.00000001")),
      "the lock is released once every journal closed",
    );
    const second = build(env);
    await second.start();
    await second.close();
  });
});

describe("createApp() with the modules given", () => {
  // Each request a module answers (and the status it answers), one per module, as the other modules' would be.
  const probes = {
    water: {
      method: "GET",
      path: "/v1/odata/v4/Locations?$top=1",
      headers: { "x-api-key": "tributary-demo-key" },
      status: 200,
    },
    explorer: { method: "GET", path: "/", headers: {}, status: 200 },
    token: {
      method: "POST",
      path: "/oauth2/token",
      headers: {
        authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
        "content-type": "application/x-www-form-urlencoded",
      },
      body: "grant_type=client_credentials",
      status: 200,
    },
    // Mounted, the sync API refuses a request without a token.
    sync: { method: "GET", path: "/api/v2/sync/user", headers: {}, status: 401 },
    relay: { method: "GET", path: "/webhook/endpoints", headers: {}, status: 401 },
  } as const;
  const cases = [
    {
      module: ACCOUNTS_MODULE,
      services: ["sync"],
      answered: ["token", "sync"],
      unmounted: ["water", "explorer", "relay"],
    },
    {
      module: WATER_MODULE,
      services: ["water"],
      answered: ["water", "explorer"],
      unmounted: ["token", "sync", "relay"],
    },
  ] as const;
  for (const c of cases) {
    it(`runs ${c.module.name} alone whatever SERVICES says: /health and describe() name it, the others' routes answer 404`, async () => {
      // SERVICES is left at its default, every service: the modules given decide.
      const config = readConfig({
        STATE_DIR: "",
        PASSWORD_HASH_COST: "1024",
        RATE_LIMIT_PER_SECOND: "0",
        RATE_LIMIT_CONCURRENCY: "0",
      });
      assert.deepEqual(config.server.services, ["water", "sync", "relay"]);
      const app = createApp(config, { modules: [c.module], log: memoryLog() });
      await app.start();
      const { url } = await app.listen({ port: 0, host: "127.0.0.1" });
      try {
        assert.deepEqual(await json(await fetch(`${url}/health`)), {
          status: "ok",
          services: c.services,
        });
        assert.deepEqual(
          (await json(await fetch(`${url}/health/ready`)))["services"],
          c.services,
        );
        assert.deepEqual(app.describe(url).services, c.services);
        const statusOf = async (name: keyof typeof probes): Promise<number> => {
          const probe = probes[name];
          const response = await fetch(`${url}${probe.path}`, {
            method: probe.method,
            headers: probe.headers,
            ...("body" in probe ? { body: probe.body } : {}),
          });
          await response.arrayBuffer();
          return response.status;
        };
        for (const name of c.answered) {
          assert.equal(await statusOf(name), probes[name].status, name);
        }
        for (const name of c.unmounted) assert.equal(await statusOf(name), 404, name);
      } finally {
        await app.close();
      }
    });
  }
});

describe("createApp() and STATE_DIR", () => {
  it("keeps the datasets' snapshots in STATE_DIR's dataset-cache, the folder its backends give the water module", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-app-cache-"));
    const app = build({ SERVICES: "water", STATE_DIR: dir });
    await app.start();
    try {
      const cached = readdirSync(join(dir, "dataset-cache"));
      assert.ok(cached.length > 0, "a snapshot per dataset");
    } finally {
      await app.close();
    }
  });
});

describe("createApp() behind a proxy (TRUST_PROXY)", () => {
  it("gives next links and the OAuth issuer the scheme and host the client used through a trusted proxy, and ignores the headers from anyone else", async () => {
    const app = build({ TRUST_PROXY: "127.0.0.2" });
    await app.start();
    const { url } = await app.listen({ port: 0 });
    const { port } = new URL(url);
    const headers = {
      "x-forwarded-proto": "https",
      "x-forwarded-host": "water.example.org",
      "x-api-key": "tributary-demo-key",
    };
    const get = async (path: string, from: string) =>
      JSON.parse((await requestFrom(url, path, { headers, from })).text) as Record<string, unknown>;
    try {
      const page = await get("/v1/odata/v4/Locations?$top=1", "127.0.0.2");
      assert.match(
        String(page["@odata.nextLink"]),
        /^https:\/\/water\.example\.org\/v1\/odata\/v4\/Locations\?/,
      );
      assert.equal(
        (await get("/.well-known/oauth-authorization-server", "127.0.0.2"))["issuer"],
        "https://water.example.org",
      );
      const direct = await get("/v1/odata/v4/Locations?$top=1", "127.0.0.3");
      assert.match(
        String(direct["@odata.nextLink"]),
        new RegExp(`^http://127\\.0\\.0\\.1:${port}/`),
      );
      assert.equal(
        (await get("/.well-known/oauth-authorization-server", "127.0.0.3"))["issuer"],
        `http://127.0.0.1:${port}`,
      );
    } finally {
      await app.close();
    }
  });
});

describe("createApp() compressing answers", () => {
  it("sends water pages and CSV streams br or gzip as asked, equal to the identity answer once decoded", async () => {
    const app = build({});
    await app.start();
    const { url } = await app.listen({ port: 0 });
    try {
      for (
        const target of [
          "/v1/odata/v4/Observations?$top=2000",
          "/v1/odata/v4/Observations?$format=csv",
          "/v1/odata/v4/Metadata",
        ]
      ) {
        const get = (encoding: string) =>
          fetch(`${url}${target}`, {
            headers: { "x-api-key": "tributary-demo-key", "accept-encoding": encoding },
          });
        const plain = await get("identity");
        assert.equal(plain.headers.get("content-encoding"), null);
        assert.match(plain.headers.get("vary") ?? "", /Accept-Encoding/);
        const expected = await plain.text();
        for (
          const [asked, coding] of [["gzip, deflate, br", "br"], ["br", null], [
            "gzip;q=1, br;q=0.5",
            "gzip",
          ], ["deflate", null]] as const
        ) {
          const answer = await get(asked);
          assert.equal(answer.headers.get("content-encoding"), coding, `${target} with ${asked}`);
          // fetch decodes br and gzip itself.
          assert.equal(await answer.text(), expected, `${target} with ${asked}`);
        }
      }
    } finally {
      await app.close();
    }
  });
});

/**
 * The configuration of a new project's folder, which has no data/ and no
 * var/: the defaults that name files and folders, left unset (not given), as
 * they resolve in that folder.
 */
function newProject(env: Environment = {}): { dir: string; config: Config } {
  const dir = mkdtempSync(join(tmpdir(), "tributary-new-project-"));
  const config = readConfig({
    PASSWORD_HASH_COST: "1024",
    RATE_LIMIT_PER_SECOND: "0",
    RATE_LIMIT_CONCURRENCY: "0",
    ...env,
  });
  const within = (
    path: ConfigPath,
  ): ConfigPath => (path.given ? path : { path: join(dir, path.path), given: false });
  const inFolder = (
    variable: string,
    path: string,
  ): string => (env[variable] === undefined ? join(dir, path) : path);
  return {
    dir,
    config: {
      ...config,
      storage: { ...config.storage, stateDir: inFolder("STATE_DIR", config.storage.stateDir) },
      water: {
        ...config.water,
        dataDir: within(config.water.dataDir),
        apiKeysFile: within(config.water.apiKeysFile),
      },
      auth: { ...config.auth, clientsFile: within(config.auth.clientsFile) },
      relay: { ...config.relay, tenantsFile: within(config.relay.tenantsFile) },
    },
  };
}

/** What the app answers a request, an error thrown as the node listener answers it. */
async function answer(app: App, init: Parameters<typeof makeRequest>[0]): Promise<HttpResponse> {
  try {
    return await app.handler(makeRequest(init));
  } catch (error) {
    return errorResponse(error);
  }
}

describe("createApp() in a new project, without the files the defaults name", () => {
  it("starts with no datasets, API keys, OAuth clients or tenants, says each in one log line, and writes nothing", async () => {
    const { dir, config } = newProject();
    const log = memoryLog();
    const app = createApp(config, { log });
    await app.start();
    try {
      assert.deepEqual(log.lines.filter((line) => / no [a-zA-Z ]+: /.test(line)), [
        `Water data: no API keys: API_KEYS_FILE ${dir}/data/api_keys.json does not exist and API_KEYS is empty: every request that needs a key is refused (401) until one is set`,
        `Water data: no datasets: DATA_DIR ${dir}/data/datasets does not exist; put datasets there and reload (SIGHUP)`,
        `Token service: no OAuth clients: CLIENTS_FILE ${dir}/data/clients.json does not exist; add one with npx tributary client add`,
        `Webhook relay: no tenants: TENANTS_FILE ${dir}/data/tenants.json does not exist; add one with npx tributary tenant add`,
      ]);
      assert.equal((await answer(app, { path: "/v1/odata/v4/Locations" })).status, 401, "no key");
      assert.equal(
        (await answer(app, {
          path: "/v1/odata/v4/Locations",
          headers: { "x-api-key": "tributary-demo-key" },
        })).status,
        403,
        "no such key",
      );
      const token = await answer(app, {
        method: "POST",
        path: "/oauth2/token",
        headers: {
          authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: "grant_type=client_credentials",
      });
      assert.equal(token.status, 401);
      const intake = await answer(app, {
        method: "POST",
        path: "/webhook",
        headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
        body: JSON.stringify({ event: "order.created", data: {} }),
      });
      assert.equal(intake.status, 401);
      assert.equal((await answer(app, { path: "/health/ready" })).status, 200);
      assert.deepEqual(readdirSync(dir), [], "no var/, no file");
    } finally {
      await app.close();
    }
    assert.deepEqual(readdirSync(dir), [], "nothing at close either");
  });

  it("makes and locks STATE_DIR when it listens, before any write", async () => {
    const { dir, config } = newProject({ SERVICES: "sync", API_KEYS: "k" });
    const state = join(dir, "var");
    const first = createApp(config, { log: memoryLog() });
    await first.start();
    assert.equal(existsSync(state), false);
    await first.listen({ port: 0 });
    try {
      assert.deepEqual(readdirSync(state), ["LOCK.00000001"]);
      assert.equal(JSON.parse(readFileSync(join(state, "LOCK.00000001"), "utf8")).pid, process.pid);
    } finally {
      await first.close();
    }
    assert.deepEqual(readdirSync(state), [], "the lock released; no journal written");
  });

  it("journals its first write in a STATE_DIR it makes then, read back after a restart", async () => {
    const clients = join(mkdtempSync(join(tmpdir(), "tributary-clients-")), "clients.json");
    writeFileSync(
      clients,
      JSON.stringify([{
        client_id: "backend",
        client_secret: "s3cret",
        grant_types: ["client_credentials"],
        scopes: ["SignUp"],
      }]),
    );
    const { dir, config } = newProject({ SERVICES: "sync", CLIENTS_FILE: clients });
    const signUp = async (app: App): Promise<number> => {
      const token = await answer(app, {
        method: "POST",
        path: "/oauth2/token",
        headers: {
          authorization: `Basic ${btoa("backend:s3cret")}`,
          "content-type": "application/x-www-form-urlencoded",
        },
        body: "grant_type=client_credentials",
      });
      const created = await answer(app, {
        method: "POST",
        path: "/api/v2/sign-up",
        headers: {
          authorization: `Bearer ${JSON.parse(token.body as string).access_token}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ username: "ada", password: "correct horse battery" }),
      });
      return created.status;
    };
    const first = createApp(config, { log: memoryLog() });
    await first.start();
    assert.equal(existsSync(join(dir, "var")), false);
    try {
      assert.equal(await signUp(first), 201);
      assert.ok(
        readdirSync(join(dir, "var")).includes("LOCK.00000001"),
        "made and locked by the first write",
      );
    } finally {
      await first.close();
    }
    const second = createApp(config, { log: memoryLog() });
    await second.start();
    try {
      assert.equal(await signUp(second), 409, "ada was kept");
    } finally {
      await second.close();
    }
  });

  const named = [
    { variable: "DATA_DIR", services: "water" },
    { variable: "API_KEYS_FILE", services: "water" },
    { variable: "CLIENTS_FILE", services: "sync" },
    { variable: "TENANTS_FILE", services: "relay" },
  ] as const;
  for (const c of named) {
    it(`refuses to start when ${c.variable} names what is not there, naming it, and leaves no STATE_DIR`, async () => {
      const { dir, config } = newProject({
        SERVICES: c.services,
        API_KEYS: "k",
        [c.variable]: join(tmpdir(), "tributary-nowhere", "missing"),
      });
      const app = createApp(config, { log: memoryLog() });
      await assert.rejects(app.start(), {
        name: "ConfigError",
        variable: c.variable,
        message: new RegExp(
          `^Cannot start: ${c.variable} names .*missing, which cannot be read \\(ENOENT\\)$`,
        ),
      });
      await app.close();
      assert.deepEqual(readdirSync(dir), []);
    });
  }

  it("still refuses keys configured to be none (API_KEYS_FILE set empty, no API_KEYS)", async () => {
    const { config } = newProject({ SERVICES: "water", API_KEYS_FILE: "" });
    const app = createApp(config, { log: memoryLog() });
    await assert.rejects(app.start(), { name: "ConfigError", variable: "API_KEYS" });
    await app.close();
  });

  it("loads the default datasets folder at a reload once it is there", async () => {
    const { dir, config } = newProject({ SERVICES: "water", API_KEYS: "k" });
    const log = memoryLog();
    const app = createApp(config, { log });
    await app.start();
    try {
      const ask = async (): Promise<Record<string, unknown>> =>
        JSON.parse(
          (await answer(app, {
            path: "/v1/odata/v4/Locations",
            query: "$count=true&$top=1",
            headers: { "x-api-key": "k" },
          })).body as string,
        );
      assert.equal((await ask())["@odata.count"], 0);
      await app.reload();
      assert.equal((await ask())["@odata.count"], 0, "still none, and no failure");
      mkdirSync(join(dir, "data", "datasets"), { recursive: true });
      symlinkSync(
        join(import.meta.dirname, "..", "..", "data", "datasets", "qu-appelle-valley-lakes"),
        join(dir, "data", "datasets", "qu-appelle-valley-lakes"),
      );
      await app.reload();
      assert.ok(Number((await ask())["@odata.count"]) > 0);
      assert.ok(
        log.lines.some((line) =>
          line.startsWith(`Datasets reloaded from ${dir}/data/datasets: 1 added`)
        ),
        log.lines.join("\n"),
      );
    } finally {
      await app.close();
    }
  });
});
