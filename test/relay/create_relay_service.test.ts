import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { describe, it } from "node:test";
import { decryptJwe } from "../../lib/crypto/mod.ts";
import type { HttpResponse } from "../../lib/http/mod.ts";
import { errorResponse } from "../../lib/http/mod.ts";
import {
  createAddressPolicy,
  createRelayService,
  type Job,
  MemoryQueue,
} from "../../lib/relay/mod.ts";
import { makeRequest } from "../_helpers/http.ts";
import { countingRandom, FakeClock, makeRegistry, SECRET, T0 } from "../_helpers/relay.ts";

const KEYS = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PUBLIC_PEM = KEYS.publicKey.export({ type: "spki", format: "pem" }) as string;

function setup(options: { capacity?: number; maxPayloadBytes?: number } = {}) {
  const clock = new FakeClock();
  const registry = makeRegistry(clock);
  registry.createEndpoint("acme", {
    id: "all",
    url: "https://a.example/all",
    events: ["*"],
    secret: SECRET,
  });
  registry.createEndpoint("acme", {
    id: "users",
    url: "https://a.example/users",
    events: ["user.*"],
    secret: SECRET,
    public_key: PUBLIC_PEM,
  });
  registry.createEndpoint("globex", {
    id: "g",
    url: "https://g.example/",
    events: ["*"],
    secret: SECRET,
  });
  const queue = new MemoryQueue({ capacity: options.capacity ?? 1000 });
  const accepted: Job[] = [];
  const handler = createRelayService({
    registry,
    queue,
    now: clock.now,
    random: countingRandom(),
    maxPayloadBytes: options.maxPayloadBytes ?? 4096,
    onAccepted: (_tenant, jobs) => accepted.push(...jobs),
  });
  async function call(
    method: string,
    path: string,
    init: { body?: string | Uint8Array; headers?: Record<string, string>; key?: string | null } =
      {},
  ) {
    const headers: Record<string, string> = { ...init.headers };
    if (init.key !== null) headers["authorization"] = `Bearer ${init.key ?? "acme-key"}`;
    if (init.body !== undefined && headers["content-type"] === undefined) {
      headers["content-type"] = "application/json";
    }
    let response: HttpResponse;
    try {
      const [pathname, query = ""] = path.split("?");
      response = await handler(
        makeRequest({
          method,
          path: pathname!,
          query,
          headers,
          ...(init.body === undefined ? {} : { body: init.body }),
        }),
      );
    } catch (error) {
      response = errorResponse(error);
    }
    const text = typeof response.body === "string" ? response.body : "";
    return {
      status: response.status,
      headers: response.headers ?? {},
      json: text === "" ? undefined : JSON.parse(text),
    };
  }
  return { clock, registry, queue, accepted, call, handler };
}

const WEBHOOK = JSON.stringify({ event: "user.created", data: { user_id: "12345" } });

describe("createRelayService() intake", () => {
  it("accepts a webhook with 202 once one job per matching endpoint is queued", async () => {
    const t = setup();
    const response = await t.call("POST", "/webhook", { body: WEBHOOK });
    assert.equal(response.status, 202);
    assert.match(response.json.id, /^msg_[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(response.json.endpoints, ["all", "users"]);
    assert.equal(response.headers["location"], `/webhook/messages/${response.json.id}`);
    const jobs = await t.queue.message("acme", response.json.id);
    assert.deepEqual(jobs.map((job) => job.endpointId).sort(), ["all", "users"]);
    assert.equal(t.accepted.length, 2);
  });

  it("sends {type, timestamp, data}, and encrypts it at intake for an endpoint with a public key", async () => {
    const t = setup();
    const { json } = await t.call("POST", "/webhook", { body: WEBHOOK });
    const jobs = await t.queue.message("acme", json.id);
    const plain = jobs.find((job) => job.endpointId === "all")!;
    assert.equal(plain.contentType, "application/json");
    assert.deepEqual(JSON.parse(plain.body), {
      type: "user.created",
      timestamp: new Date(t.clock.time).toISOString(),
      data: { user_id: "12345" },
    });
    const sealed = jobs.find((job) => job.endpointId === "users")!;
    assert.equal(sealed.contentType, "application/json");
    assert.ok(!sealed.body.includes("12345"), "no plaintext rests in the queue");
    const envelope = JSON.parse(sealed.body);
    assert.deepEqual(Object.keys(envelope), ["type", "timestamp", "encrypted"]);
    assert.equal(envelope.type, "user.created");
    assert.equal(envelope.timestamp, new Date(t.clock.time).toISOString());
    assert.equal(
      new TextDecoder().decode(decryptJwe(envelope.encrypted, KEYS.privateKey)),
      plain.body,
    );
  });

  const shapes = [
    {
      name: "event first, compact",
      body: '{"event":"user.created","data":{"n":12345678901234567890,"f":1.50}}',
    },
    {
      name: "event first, spaced and on lines",
      body:
        '\n { "event" : "user.created" ,\r\n\t"data" : {"n":12345678901234567890,"f":1.50} } \n',
    },
    {
      name: "data first",
      body: '{"data":{"n":12345678901234567890,"f":1.50},"event":"user.created"}',
    },
    {
      name: "an escaped key",
      body: '{"\\u0065vent":"user.created","data":{"n":12345678901234567890,"f":1.50}}',
    },
    {
      name: "data repeated (the last counts, as in JSON.parse)",
      body: '{"event":"user.created","data":{"n":1},"data":{"n":12345678901234567890,"f":1.50}}',
    },
  ];
  for (const shape of shapes) {
    it(`forwards data exactly as sent, every digit kept: ${shape.name}`, async () => {
      const t = setup();
      const { status, json } = await t.call("POST", "/webhook", { body: shape.body });
      assert.equal(status, 202);
      const [job] = (await t.queue.message("acme", json.id)).filter((one) =>
        one.endpointId === "all"
      );
      assert.equal(
        job!.body,
        `{"type":"user.created","timestamp":"${
          new Date(t.clock.time).toISOString()
        }","data":{"n":12345678901234567890,"f":1.50}}`,
      );
    });
  }

  it("refuses a body that is not UTF-8 with 400", async () => {
    const t = setup();
    const body = new Uint8Array([
      ...new TextEncoder().encode('{"event":"a","data":{"x":"'),
      0xff,
      ...new TextEncoder().encode('"}}'),
    ]);
    const response = await t.call("POST", "/webhook", { body });
    assert.equal(response.status, 400);
    assert.equal(response.json.error.code, "ERR_HTTP_INVALID_JSON");
    assert.match(response.json.error.message, /UTF-8/);
  });

  it("refuses a body shaped like a webhook whose data is not valid JSON", async () => {
    const t = setup();
    for (
      const body of [
        '{"event":"a","data":{"x":}}',
        '{"event":"a","data":{"x":1}',
        '{"event":"a","data":{"x":1}} x',
        '{"event":"a","data":{"x":1}},',
      ]
    ) {
      const response = await t.call("POST", "/webhook", { body });
      assert.equal(response.status, 400, body);
      assert.equal(response.json.error.code, "ERR_HTTP_INVALID_JSON", body);
    }
    assert.equal(t.accepted.length, 0);
  });

  it("routes only to the endpoints whose patterns match the event", async () => {
    const t = setup();
    const { json } = await t.call("POST", "/webhook", {
      body: JSON.stringify({ event: "invoice.paid", data: {} }),
    });
    assert.deepEqual(json.endpoints, ["all"]);
  });

  it("answers an Idempotency-Key used again with the first answer, and 409 for another body", async () => {
    const t = setup();
    const headers = { "idempotency-key": "order-77" };
    const first = await t.call("POST", "/webhook", { body: WEBHOOK, headers });
    const again = await t.call("POST", "/webhook", { body: WEBHOOK, headers });
    assert.equal(again.status, 202);
    assert.deepEqual(again.json, first.json);
    assert.equal(again.headers["idempotent-replayed"], "true");
    assert.equal(t.accepted.length, 2, "nothing queued twice");
    const other = await t.call("POST", "/webhook", {
      body: JSON.stringify({ event: "x", data: {} }),
      headers,
    });
    assert.equal(other.status, 409);
    assert.equal(other.json.error.code, "ERR_RELAY_IDEMPOTENCY_CONFLICT");
    const globex = await t.call("POST", "/webhook", { body: WEBHOOK, headers, key: "globex-key" });
    assert.notEqual(globex.json.id, first.json.id, "keys are per tenant");
  });

  it("answers 503 with Retry-After when the queue is full, queueing nothing", async () => {
    const t = setup({ capacity: 3 });
    assert.equal((await t.call("POST", "/webhook", { body: WEBHOOK })).status, 202);
    const full = await t.call("POST", "/webhook", { body: WEBHOOK });
    assert.equal(full.status, 503);
    assert.equal(full.headers["retry-after"], "1");
    assert.equal(full.json.error.code, "ERR_RELAY_QUEUE_FULL");
    assert.deepEqual(await t.queue.depth(t.clock.time), {
      ready: 2,
      delayed: 0,
      leased: 0,
      dead: 0,
    });
  });

  const bad: {
    name: string;
    body?: string;
    headers?: Record<string, string>;
    key?: string | null;
    status: number;
    code: string;
    target?: string;
  }[] = [
    { name: "no API key", body: WEBHOOK, key: null, status: 401, code: "ERR_HTTP_UNAUTHORIZED" },
    {
      name: "an unknown API key",
      body: WEBHOOK,
      key: "nope",
      status: 401,
      code: "ERR_HTTP_UNAUTHORIZED",
    },
    {
      name: "a Basic authorization",
      body: WEBHOOK,
      key: null,
      headers: { authorization: "Basic eDp5" },
      status: 401,
      code: "ERR_HTTP_UNAUTHORIZED",
    },
    {
      name: "a wrong content type",
      body: WEBHOOK,
      headers: { "content-type": "text/plain" },
      status: 415,
      code: "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
    },
    {
      name: "an oversize body",
      body: JSON.stringify({ event: "a", data: { x: "y".repeat(5000) } }),
      status: 413,
      code: "ERR_HTTP_BODY_TOO_LARGE",
    },
    { name: "non-JSON", body: "{event:", status: 400, code: "ERR_HTTP_INVALID_JSON" },
    {
      name: "JSON nested too deep to serialize again",
      body: `{"event":"a","data":${'{"a":'.repeat(600)}1${"}".repeat(600)}}`,
      status: 400,
      code: "ERR_HTTP_JSON_TOO_DEEP",
    },
    {
      name: "JSON that is not an object",
      body: "[1]",
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
    },
    {
      name: "a missing event",
      body: '{"data":{}}',
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "event",
    },
    {
      name: "an event that is not a string",
      body: '{"event":1,"data":{}}',
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "event",
    },
    {
      name: "a malformed event name",
      body: '{"event":"a b","data":{}}',
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "event",
    },
    {
      name: "missing data",
      body: '{"event":"a"}',
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "data",
    },
    {
      name: "data that is not an object",
      body: '{"event":"a","data":[1]}',
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "data",
    },
    {
      name: "an unknown field",
      body: '{"event":"a","data":{},"url":"x"}',
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "url",
    },
    {
      name: "a malformed Idempotency-Key",
      body: WEBHOOK,
      headers: { "idempotency-key": "a b" },
      status: 400,
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "idempotency-key",
    },
  ];
  for (const c of bad) {
    it(`refuses ${c.name} with ${c.status}`, async () => {
      const t = setup();
      const response = await t.call("POST", "/webhook", {
        ...(c.body === undefined ? {} : { body: c.body }),
        ...(c.headers === undefined ? {} : { headers: c.headers }),
        ...(c.key === undefined ? {} : { key: c.key }),
      });
      assert.equal(response.status, c.status);
      assert.equal(response.json.error.code, c.code);
      if (c.target !== undefined) assert.equal(response.json.error.target, c.target);
      if (c.status === 401) assert.match(response.headers["www-authenticate"] ?? "", /^Bearer/);
      assert.equal(t.accepted.length, 0);
    });
  }
});

describe("createRelayService() endpoints", () => {
  it("lists, creates, reads, updates and deletes a tenant's endpoints", async () => {
    const t = setup();
    const created = await t.call("POST", "/webhook/endpoints", {
      body: JSON.stringify({ url: "https://new.example/h", events: ["order.*"] }),
    });
    assert.equal(created.status, 201);
    assert.match(created.json.id, /^ep_/);
    assert.match(created.json.secret, /^whsec_/);
    const id = created.json.id as string;
    const list = await t.call("GET", "/webhook/endpoints");
    assert.deepEqual(list.json.data.map((endpoint: { id: string }) => endpoint.id), [
      "all",
      "users",
      id,
    ]);
    assert.equal(list.json.data[0].secret, undefined, "secrets are not listed");
    const patched = await t.call("PATCH", `/webhook/endpoints/${id}`, {
      body: JSON.stringify({ enabled: false, rate_limit_per_second: 5 }),
    });
    assert.equal(patched.json.enabled, false);
    assert.equal(patched.json.rate_limit_per_second, 5);
    assert.equal((await t.call("GET", `/webhook/endpoints/${id}`)).json.enabled, false);
    assert.equal((await t.call("DELETE", `/webhook/endpoints/${id}`)).status, 204);
    assert.equal((await t.call("GET", `/webhook/endpoints/${id}`)).status, 404);
  });

  it("hides one tenant's endpoints from another", async () => {
    const t = setup();
    assert.equal(
      (await t.call("GET", "/webhook/endpoints/all", { key: "globex-key" })).status,
      404,
    );
    assert.equal(
      (await t.call("DELETE", "/webhook/endpoints/all", { key: "globex-key" })).status,
      404,
    );
    assert.ok(t.registry.endpoint("acme", "all"));
  });

  it("rotates a secret, the old one signing alongside until the overlap ends", async () => {
    const t = setup();
    const rotated = await t.call("POST", "/webhook/endpoints/all/rotate-secret");
    assert.equal(rotated.status, 200);
    assert.equal(rotated.json.secrets.length, 2);
    assert.notEqual(rotated.json.secrets[0].secret, SECRET);
    assert.equal(rotated.json.secrets[0].expires_at, null);
    assert.deepEqual([rotated.json.secrets[1].secret, rotated.json.secrets[1].expires_at], [
      SECRET,
      new Date(t.clock.time + 86_400_000).toISOString(),
    ]);
    await t.clock.advance(86_400_000);
    assert.equal((await t.call("GET", "/webhook/endpoints/all/secret")).json.secrets.length, 1);
  });

  const invalid: { name: string; body: string; target: string }[] = [
    {
      name: "a URL that is not http or https",
      body: '{"url":"ftp://x/","events":["*"]}',
      target: "url",
    },
    {
      name: "a URL with credentials",
      body: '{"url":"https://u:p@x/","events":["*"]}',
      target: "url",
    },
    { name: "no events", body: '{"url":"https://x/","events":[]}', target: "events" },
    {
      name: "a malformed pattern",
      body: '{"url":"https://x/","events":["a.*.b"]}',
      target: "events[0]",
    },
    {
      name: "a malformed secret",
      body: '{"url":"https://x/","events":["*"],"secret":"abc"}',
      target: "secret",
    },
    {
      name: "a key that is not RSA PEM",
      body: '{"url":"https://x/","events":["*"],"public_key":"nope"}',
      target: "public_key",
    },
    {
      name: "a negative rate limit",
      body: '{"url":"https://x/","events":["*"],"rate_limit_per_second":-1}',
      target: "rate_limit_per_second",
    },
    {
      name: "an unknown field",
      body: '{"url":"https://x/","events":["*"],"colour":"red"}',
      target: "colour",
    },
  ];
  for (const c of invalid) {
    it(`refuses an endpoint with ${c.name} (400)`, async () => {
      const t = setup();
      const response = await t.call("POST", "/webhook/endpoints", { body: c.body });
      assert.equal(response.status, 400);
      assert.equal(response.json.error.code, "ERR_RELAY_INVALID_ENDPOINT");
      assert.equal(response.json.error.target, c.target);
    });
  }

  it("refuses an endpoint id that is taken with 409", async () => {
    const t = setup();
    const response = await t.call("POST", "/webhook/endpoints", {
      body: '{"id":"all","url":"https://x/","events":["*"]}',
    });
    assert.equal(response.status, 409);
    assert.equal(response.json.error.code, "ERR_RELAY_ENDPOINT_EXISTS");
  });
});

describe("createRelayService() messages and dead letters", () => {
  it("shows a message's deliveries to its tenant only", async () => {
    const t = setup();
    const { json } = await t.call("POST", "/webhook", { body: WEBHOOK });
    const status = await t.call("GET", `/webhook/messages/${json.id}`);
    assert.equal(status.status, 200);
    assert.deepEqual(
      status.json.deliveries.map((
        d: { endpoint_id: string; state: string },
      ) => [d.endpoint_id, d.state]).sort(),
      [["all", "ready"], ["users", "ready"]],
    );
    assert.equal(
      (await t.call("GET", `/webhook/messages/${json.id}`, { key: "globex-key" })).status,
      404,
    );
  });

  it("lists dead letters and replays one or all", async () => {
    const t = setup();
    const { json } = await t.call("POST", "/webhook", { body: WEBHOOK });
    for (const lease of await t.queue.claim({ now: t.clock.time, limit: 10, leaseMs: 1000 })) {
      await t.queue.bury(lease, { reason: "all 8 attempts failed", at: t.clock.time });
    }
    const dead = await t.call("GET", "/webhook/dead-letters?limit=10");
    assert.equal(dead.json.data.length, 2);
    assert.equal(dead.json.data[0].reason, "all 8 attempts failed");
    assert.equal((await t.call("GET", "/webhook/dead-letters?endpoint=users")).json.data.length, 1);
    assert.equal((await t.call("GET", "/webhook/dead-letters?limit=0")).status, 400);
    assert.equal(
      (await t.call("GET", "/webhook/dead-letters", { key: "globex-key" })).json.data.length,
      0,
    );
    const one = await t.call("POST", `/webhook/dead-letters/${json.id}.users/replay`);
    assert.deepEqual([one.status, one.json.replayed], [202, 1]);
    assert.equal(
      (await t.call("POST", `/webhook/dead-letters/${json.id}.users/replay`)).status,
      404,
    );
    const all = await t.call("POST", "/webhook/dead-letters/replay");
    assert.deepEqual([all.status, all.json.replayed], [202, 1]);
    assert.equal(
      (await t.call("POST", "/webhook/dead-letters/replay", { body: '{"endpoint":"x"}' })).status,
      400,
    );
  });
});

describe("createRelayService() message log and attempt counts", () => {
  /** Three messages a second apart: user.created (both endpoints), order.paid (all), user.deleted (both); their fates set by hand. */
  async function history() {
    const t = setup();
    const ids: string[] = [];
    for (const event of ["user.created", "order.paid", "user.deleted"]) {
      ids.push(
        (await t.call("POST", "/webhook", { body: JSON.stringify({ event, data: {} }) })).json.id,
      );
      await t.clock.advance(1000);
    }
    const at = t.clock.time;
    const attempt = (status: number) => ({
      at,
      outcome: status === 200 ? "success" as const : "failure" as const,
      status,
      latencyMs: 12,
      error: status === 200 ? null : `HTTP ${status}`,
    });
    for (const lease of await t.queue.claim({ now: at, limit: 10, leaseMs: 1000 })) {
      const { messageId, endpointId } = lease.job;
      if (messageId === ids[0] && endpointId === "users") {
        await t.queue.bury(lease, { attempt: attempt(500), reason: "attempts ran out", at });
      } else if (messageId === ids[2]) await t.queue.retry(lease, attempt(503), at + 5000);
      else await t.queue.ack(lease, attempt(200));
    }
    return { t, ids };
  }

  it("lists the tenant's messages newest first with their deliveries and attempts, a page at a time", async () => {
    const { t, ids } = await history();
    const first = await t.call("GET", "/webhook/messages?limit=2");
    assert.equal(first.status, 200);
    assert.deepEqual(first.json.data.map((message: { id: string }) => message.id), [
      ids[2],
      ids[1],
    ]);
    const deleted = first.json.data[0];
    assert.equal(deleted.event, "user.deleted");
    assert.equal(deleted.created_at, new Date(T0 + 2000).toISOString());
    assert.deepEqual(deleted.deliveries[0].attempts, [{
      at: new Date(T0 + 3000).toISOString(),
      outcome: "failure",
      status: 503,
      latency_ms: 12,
      error: "HTTP 503",
    }]);
    assert.equal(typeof first.json.next_cursor, "string");
    const second = await t.call(
      "GET",
      `/webhook/messages?limit=2&cursor=${first.json.next_cursor}`,
    );
    assert.deepEqual(second.json.data.map((message: { id: string }) => message.id), [ids[0]]);
    assert.equal(second.json.next_cursor, null);
    assert.deepEqual((await t.call("GET", "/webhook/messages", { key: "globex-key" })).json, {
      data: [],
      next_cursor: null,
    });
  });

  const filters = [
    { name: "event", query: "event=order.paid", expected: [1] },
    { name: "a dead delivery", query: "status=dead", expected: [0] },
    { name: "a pending delivery", query: "status=pending", expected: [2] },
    { name: "a delivered delivery", query: "status=delivered", expected: [1, 0] },
    { name: "endpoint and status", query: "endpoint=all&status=delivered", expected: [1, 0] },
    {
      name: "creation time",
      query: `since=${new Date(T0 + 1000).toISOString()}&until=${
        new Date(T0 + 2000).toISOString()
      }`,
      expected: [1],
    },
    { name: "an event nothing has", query: "event=none", expected: [] },
  ] as const;
  for (const c of filters) {
    it(`filters the log by ${c.name}`, async () => {
      const { t, ids } = await history();
      const answer = await t.call("GET", `/webhook/messages?${c.query}`);
      assert.deepEqual(
        answer.json.data.map((message: { id: string }) => message.id),
        c.expected.map((i) => ids[i]),
      );
    });
  }

  it("shows only the endpoint's delivery when the log is filtered by endpoint", async () => {
    const { t, ids } = await history();
    const answer = await t.call("GET", "/webhook/messages?endpoint=users&status=dead");
    assert.deepEqual(
      answer.json.data.map((
        message: {
          id: string;
          deliveries: { endpoint_id: string; state: string; reason: string }[];
        },
      ) => [message.id, message.deliveries]),
      [
        [ids[0], [{
          ...answer.json.data[0].deliveries[0],
          endpoint_id: "users",
          state: "dead",
          reason: "attempts ran out",
        }]],
      ],
    );
  });

  const refusals = [
    { query: "limit=0", target: "limit" },
    { query: "limit=101", target: "limit" },
    { query: "status=failed", target: "status" },
    { query: "since=yesterday", target: "since" },
    { query: "until=2026-11-01", target: "until" },
    { query: "cursor=bm90IGEgY3Vyc29y", target: "cursor" },
  ] as const;
  for (const c of refusals) {
    it(`refuses ${c.query} with 400 naming ${c.target}`, async () => {
      const { t } = await history();
      const answer = await t.call("GET", `/webhook/messages?${c.query}`);
      assert.equal(answer.status, 400);
      assert.equal(answer.json.error.target, c.target);
    });
  }

  it("asks for the key: 401 without one", async () => {
    const t = setup();
    assert.equal((await t.call("GET", "/webhook/messages", { key: null })).status, 401);
    assert.equal((await t.call("GET", "/webhook/stats", { key: null })).status, 401);
  });

  it("counts each endpoint's attempts and successes over the last 24 hours, every endpoint listed", async () => {
    const { t } = await history();
    const answer = await t.call("GET", "/webhook/stats");
    assert.equal(answer.status, 200);
    assert.equal(answer.json.since, new Date(t.clock.time - 86_400_000).toISOString());
    assert.deepEqual(answer.json.data, [
      { endpoint_id: "all", attempts: 3, successes: 2, failures: 1, success_rate: 2 / 3 },
      { endpoint_id: "users", attempts: 2, successes: 0, failures: 2, success_rate: 0 },
    ]);
    assert.deepEqual((await t.call("GET", "/webhook/stats", { key: "globex-key" })).json.data, [
      { endpoint_id: "g", attempts: 0, successes: 0, failures: 0, success_rate: null },
    ]);
    const later = new Date(t.clock.time + 1).toISOString();
    assert.equal(
      (await t.call("GET", `/webhook/stats?since=${later}`)).status,
      400,
      "since in the future",
    );
    const older = new Date(t.clock.time - 86_400_001).toISOString();
    assert.equal(
      (await t.call("GET", `/webhook/stats?since=${older}`)).json.error.target,
      "since",
      "since past the counts",
    );
  });
});

describe("createRelayService() portal", () => {
  it("serves the portal page without a key, under a policy that allows no other origin and no markup from strings", async () => {
    const t = setup();
    const page = await t.handler(makeRequest({ path: "/webhook/portal" }));
    assert.equal(page.status, 200);
    assert.equal(page.headers?.["content-type"], "text/html; charset=utf-8");
    const policy = page.headers?.["content-security-policy"] ?? "";
    for (
      const directive of [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "require-trusted-types-for 'script'",
      ]
    ) {
      assert.ok(policy.includes(directive), directive);
    }
    const html = String(page.body);
    assert.match(html, /<script type="module" src="\/webhook\/portal\/portal\.js"><\/script>/);
    assert.doesNotMatch(
      html,
      /<script>|\sstyle=|\son[a-z]+=/i,
      "no inline script, style attribute or handler",
    );
    const script = await t.handler(makeRequest({ path: "/webhook/portal/portal.js" }));
    assert.equal(script.headers?.["content-type"], "text/javascript; charset=utf-8");
    assert.match(String(script.body), /sessionStorage/);
    assert.doesNotMatch(
      String(script.body),
      /^interface |: Promise<void>/m,
      "compiled from TypeScript",
    );
    const css = await t.handler(makeRequest({ path: "/webhook/portal/portal.css" }));
    assert.equal(css.headers?.["content-type"], "text/css; charset=utf-8");
    // The pages' shared stylesheet, linked before the portal's own.
    assert.match(
      html,
      /<link rel="stylesheet" href="\/webhook\/portal\/page\.css">\n<link rel="stylesheet" href="\/webhook\/portal\/portal\.css">/,
    );
    const shared = await t.handler(makeRequest({ path: "/webhook/portal/page.css" }));
    assert.equal(shared.headers?.["content-type"], "text/css; charset=utf-8");
    assert.match(String(shared.body), /^:root \{$/m);
    // The pages' shared API client, beside the portal's own module, which imports it there.
    assert.match(
      String(script.body),
      /^import \{ ApiError, createApiClient \} from "\.\/api_client\.js";$/m,
    );
    const client = await t.handler(makeRequest({ path: "/webhook/portal/api_client.js" }));
    assert.equal(client.headers?.["content-type"], "text/javascript; charset=utf-8");
    assert.match(String(client.body), /^export function createApiClient\(/m);
  });

  it("loads the portal as it is made, not on a request", () => {
    let loads = 0;
    const portal = () => (loads++, Promise.resolve({ html: "<p>", assets: [] }));
    createRelayService({
      registry: makeRegistry(new FakeClock()),
      queue: new MemoryQueue(),
      now: Date.now,
      random: countingRandom(),
      portal,
    });
    assert.equal(loads, 1);
  });

  it("serves no portal when told not to", async () => {
    const handler = createRelayService({
      registry: makeRegistry(new FakeClock()),
      queue: new MemoryQueue(),
      now: Date.now,
      random: countingRandom(),
      portal: false,
    });
    await assert.rejects(async () => await handler(makeRequest({ path: "/webhook/portal" })), {
      code: "ERR_HTTP_NOT_FOUND",
    });
  });
});

describe("createRelayService() refusing bad input", () => {
  const invalidJson = [
    {
      name: "U+00A0 before the closing brace",
      body: '{"event": "user.created", "data": {"a": 1}\u00a0}',
    },
    {
      name: "U+FEFF before the closing brace",
      body: '{"event": "user.created", "data": {"a": 1}\ufeff}',
    },
    { name: "U+00A0 after the data", body: '{"event": "user.created", "data": {"a": 1}  \u00a0 }' },
  ] as const;
  for (const c of invalidJson) {
    it(`answers 400 to a body with ${c.name}, which is not JSON`, async () => {
      assert.throws(() => JSON.parse(c.body), SyntaxError, "the body is indeed invalid JSON");
      const response = await setup().call("POST", "/webhook", { body: c.body });
      assert.equal(response.status, 400);
    });
  }

  it("still takes JSON's own white space around the data", async () => {
    const response = await setup().call("POST", "/webhook", {
      body: '{"event": "user.created", "data": {"a": 1} \t\r\n }',
    });
    assert.equal(response.status, 202);
  });

  it("refuses a private key as an endpoint's public_key, naming the field", async () => {
    const privatePem = KEYS.privateKey.export({ type: "pkcs8", format: "pem" }) as string;
    const response = await setup().call("POST", "/webhook/endpoints", {
      body: JSON.stringify({ url: "https://a.example/k", events: ["*"], public_key: privatePem }),
    });
    assert.equal(response.status, 400);
    assert.equal(response.json.error.target, "public_key");
    assert.match(response.json.error.message, /private key/);
  });

  const rates = [
    { rate: 1e-300, status: 400 },
    { rate: 0.009, status: 400 },
    { rate: 0.01, status: 201 },
    { rate: 2.5, status: 201 },
  ] as const;
  for (const c of rates) {
    it(`answers ${c.status} to rate_limit_per_second ${c.rate}`, async () => {
      const response = await setup().call("POST", "/webhook/endpoints", {
        body: JSON.stringify({
          url: "https://a.example/r",
          events: ["*"],
          rate_limit_per_second: c.rate,
        }),
      });
      assert.equal(response.status, c.status, JSON.stringify(response.json));
      if (c.status === 400) assert.equal(response.json.error.target, "rate_limit_per_second");
    });
  }
});

describe("createRelayService() with an address policy", () => {
  function withPolicy(allow: readonly string[]) {
    const clock = new FakeClock();
    const registry = makeRegistry(clock);
    const handler = createRelayService({
      registry,
      queue: new MemoryQueue(),
      now: clock.now,
      random: countingRandom(),
      addressPolicy: createAddressPolicy({ allow }),
    });
    return async (method: string, path: string, body: unknown) => {
      try {
        const response = await handler(
          makeRequest({
            method,
            path,
            headers: { authorization: "Bearer acme-key", "content-type": "application/json" },
            body: JSON.stringify(body),
          }),
        );
        return {
          status: response.status,
          json: JSON.parse(String(response.body)) as Record<string, unknown>,
        };
      } catch (error) {
        const response = errorResponse(error);
        return {
          status: response.status,
          json: JSON.parse(String(response.body)) as {
            error: { target?: string; message: string };
          },
        };
      }
    };
  }

  const refused = [
    { url: "http://127.0.0.1:9000/hook", opening: "127.0.0.1/32" },
    { url: "http://[::1]/hook", opening: "::1/128" },
    { url: "http://10.1.2.3/", opening: "10.1.2.3/32" },
    { url: "http://[::ffff:0:7f00:1]/", opening: "::ffff:0:7f00:1/128" },
    { url: "http://169.254.169.254/latest", opening: "169.254.169.254/32" },
  ] as const;
  for (const { url, opening } of refused) {
    it(`refuses an endpoint at ${url} at creation, saying why and that ALLOW_PRIVATE_TARGETS=${opening} would allow it`, async () => {
      const call = withPolicy([]);
      const created = await call("POST", "/webhook/endpoints", { url, events: ["*"] });
      assert.equal(created.status, 400);
      assert.equal((created.json as { error: { target: string } }).error.target, "url");
      const { message } = (created.json as { error: { message: string } }).error;
      assert.match(
        message,
        /^Cannot use endpoint field "url": every delivery to \S+ would be refused: address \S+ is refused \(/,
      );
      assert.ok(
        message.endsWith(`; to deliver there, add ${opening} to ALLOW_PRIVATE_TARGETS`),
        message,
      );
    });
  }

  it("refuses such a URL in a change too, and takes one the allow list opens, and any host name", async () => {
    const call = withPolicy(["127.0.0.1/32"]);
    assert.equal(
      (await call("POST", "/webhook/endpoints", {
        id: "local",
        url: "http://127.0.0.1:9000/hook",
        events: ["*"],
      })).status,
      201,
    );
    assert.equal(
      (await call("PATCH", "/webhook/endpoints/local", { url: "http://192.168.1.1/hook" })).status,
      400,
    );
    assert.equal(
      (await call("POST", "/webhook/endpoints", {
        url: "https://hooks.example.org/in",
        events: ["*"],
      })).status,
      201,
      "a name is checked when it is dialled",
    );
  });
});
