// Intake's decisions without HTTP: acceptWebhook and webhookAnswer are pure,
// with the time, ids, routes and randomness passed in.
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { describe, it } from "node:test";
import { decryptJwe, parseRsaKey, signWebhook } from "../../lib/crypto/mod.ts";
import { acceptWebhook, type IntakeContext, webhookAnswer } from "../../lib/relay/mod.ts";
import { checkIdempotencyKey } from "../../lib/relay/accept_webhook.ts";
import { retainedBytesPer } from "../_helpers/allocation.ts";
import { countingRandom, FakeClock, makeRegistry, SECRET } from "../_helpers/relay.ts";

const KEYS = generateKeyPairSync("rsa", {
  modulusLength: 2048,
  publicKeyEncoding: { type: "spki", format: "pem" },
  privateKeyEncoding: { type: "pkcs8", format: "pem" },
});
const encoder = new TextEncoder();

function context(overrides: Partial<IntakeContext> = {}): IntakeContext {
  const clock = new FakeClock();
  const registry = makeRegistry(clock);
  registry.createEndpoint("acme", {
    id: "plain",
    url: "https://a.example/",
    events: ["order.*"],
    secret: SECRET,
  });
  registry.createEndpoint("acme", {
    id: "sealed",
    url: "https://b.example/",
    events: ["*"],
    secret: SECRET,
    public_key: KEYS.publicKey,
  });
  return {
    now: clock.time,
    timestamp: new Date(clock.time).toISOString(),
    messageId: "msg_1",
    route: (event) => registry.route("acme", event),
    encryptionKey: undefined,
    random: countingRandom(),
    idempotencyTtlMs: 60_000,
    ...overrides,
  };
}

describe("acceptWebhook()", () => {
  it("makes one job per routed endpoint, plain or sealed, and the 202 body; nothing is queued by it", () => {
    const ctx = context();
    const accepted = acceptWebhook({
      tenantId: "acme",
      body: encoder.encode('{"event":"order.paid","data":{"n":12345678901234567890}}'),
      idempotencyKey: undefined,
    }, ctx);
    assert.equal(
      accepted.response,
      '{"id":"msg_1","event":"order.paid","endpoints":["plain","sealed"]}',
    );
    assert.equal(accepted.bodyHash, "");
    assert.equal(accepted.batch.idempotency, undefined);
    const [plain, sealed] = accepted.batch.jobs;
    assert.equal(
      plain!.body,
      `{"type":"order.paid","timestamp":"${ctx.timestamp}","data":{"n":12345678901234567890}}`,
      "the data's digits kept",
    );
    assert.deepEqual([plain!.id, plain!.createdAt, plain!.dueAt, plain!.attempts], [
      "msg_1.plain",
      ctx.now,
      ctx.now,
      [],
    ]);
    const envelope = JSON.parse(sealed!.body) as { encrypted: string };
    assert.ok(!sealed!.body.includes("12345678901234567890"));
    assert.equal(
      new TextDecoder().decode(decryptJwe(envelope.encrypted, KEYS.privateKey)),
      plain!.body,
    );
  });

  it("keeps the data as sent between JSON white space, and parses other shapes whole", () => {
    const ctx = context();
    const bodyOf = (text: string) =>
      acceptWebhook(
        { tenantId: "acme", body: encoder.encode(text), idempotencyKey: undefined },
        ctx,
      )
        .batch.jobs[0]!.body;
    const wrapped = (data: string) =>
      `{"type":"order.paid","timestamp":"${ctx.timestamp}","data":${data}}`;
    assert.equal(
      bodyOf(' \t{ "event" : "order.paid" ,\r\n "data" :\n\t{ "a": [1, 2.50] } \r\n}\n '),
      wrapped('{ "a": [1, 2.50] }'),
      "white space around the data and the body dropped, inside it kept",
    );
    // U+00A0 is not JSON white space: after the closing brace it is refused, never trimmed.
    assert.throws(
      () => bodyOf('{"event":"order.paid","data":{"a":1}}\u00a0'),
      { code: "ERR_HTTP_INVALID_JSON" },
    );
    // Data that is not one object after the head (a repeated member): the whole parse decides.
    assert.equal(
      bodyOf('{"event":"order.paid","data":{"a":1},"data":{"b":2}}'),
      wrapped('{"b":2}'),
    );
  });

  it("encrypts for every endpoint without its own key when an encryption key is given", () => {
    const accepted = acceptWebhook(
      {
        tenantId: "acme",
        body: encoder.encode('{"event":"order.paid","data":{"secret":"s"}}'),
        idempotencyKey: undefined,
      },
      context({ encryptionKey: parseRsaKey(KEYS.publicKey) }),
    );
    for (const job of accepted.batch.jobs) {
      assert.ok(!job.body.includes('"s"'), `${job.endpointId} is sealed`);
    }
  });

  it("keeps the answer with an idempotency key, and the body's hash", () => {
    const accepted = acceptWebhook({
      tenantId: "acme",
      body: encoder.encode('{"event":"x.y","data":{}}'),
      idempotencyKey: "k-1",
    }, context());
    assert.deepEqual(accepted.batch.idempotency, {
      key: "k-1",
      answer: { bodyHash: accepted.bodyHash, messageId: "msg_1", response: accepted.response },
      expiresAt: context().now + 60_000,
    });
    assert.match(accepted.bodyHash, /^[0-9a-f]{64}$/);
  });

  it("reads every event name alike, however many names come", () => {
    // More names than the copies it keeps of them: it starts again and reads on.
    const ctx = context();
    for (let i = 0; i < 1500; i++) {
      const event = `order.paid_${i}`;
      const accepted = acceptWebhook({
        tenantId: "acme",
        body: encoder.encode(`{"event":"${event}","data":{"i":${i}}}`),
        idempotencyKey: undefined,
      }, ctx);
      assert.equal(accepted.batch.jobs[0]!.event, event);
      assert.ok(accepted.batch.jobs[0]!.body.startsWith(`{"type":"${event}",`));
    }
  });

  it("leaves no view of the webhook's text in a delivered job", () => {
    // A delivered job stays for the status API. Its body, once signed, is a string of its own;
    // its event must not be a view of the text the webhook came in (V8 makes one from 13
    // characters on), which would keep that text (the body's size again) as long as the job.
    const base = context();
    const ctx = { ...base, route: (event: string) => base.route(event).slice(0, 1) };
    const note = "x".repeat(1000);
    let size = 0;
    const perJob = retainedBytesPer(4000, (i) => {
      const accepted = acceptWebhook({
        tenantId: "acme",
        body: encoder.encode(`{"event":"order.created","data":{"i":${i},"note":"${note}"}}`),
        idempotencyKey: undefined,
      }, ctx);
      const job = accepted.batch.jobs[0]!;
      // What a delivery does with the body: sign it (which flattens it).
      signWebhook(new Uint8Array(32).fill(7), job.messageId, 1, job.body);
      size = job.body.length;
      return job;
    });
    // The job's own fields and its body: about 1.2 times the body; with a view of the text, 2.2.
    assert.ok(perJob < 1.6 * size, `${perJob.toFixed(0)} bytes a job of a ${size}-byte body`);
  });

  it("refuses a bad body naming the field, before anything is made", () => {
    const submit = (body: string) => () =>
      acceptWebhook(
        { tenantId: "acme", body: encoder.encode(body), idempotencyKey: undefined },
        context(),
      );
    assert.throws(submit("nope"), { code: "ERR_HTTP_INVALID_JSON" });
    assert.throws(submit('{"event":"a b","data":{}}'), {
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "event",
    });
    assert.throws(submit('{"event":"a","data":[]}'), {
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "data",
    });
    assert.throws(submit('{"event":"a","data":{},"extra":1}'), {
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "extra",
    });
    assert.throws(() => checkIdempotencyKey("has space"), {
      code: "ERR_RELAY_INVALID_WEBHOOK",
      target: "idempotency-key",
    });
    assert.equal(checkIdempotencyKey(undefined), undefined);
  });
});

describe("webhookAnswer()", () => {
  const accepted = acceptWebhook({
    tenantId: "acme",
    body: encoder.encode('{"event":"x.y","data":{}}'),
    idempotencyKey: "k",
  }, context());

  it("answers 202 with the message and its status link once queued", () => {
    const answer = webhookAnswer({ accepted: true }, accepted, "/webhook");
    assert.equal(answer.status, 202);
    assert.equal(answer.body, accepted.response);
    assert.equal(answer.headers?.["location"], "/webhook/messages/msg_1");
    assert.equal(answer.headers?.["content-length"], String(accepted.response.length));
  });

  it("gives the first answer again for a used key with the same body, and 409 for another body", () => {
    const previous = {
      bodyHash: accepted.bodyHash,
      messageId: "msg_0",
      response: '{"id":"msg_0"}',
    };
    const again = webhookAnswer({ accepted: false, previous }, accepted, "/webhook");
    assert.deepEqual([again.status, again.body, again.headers?.["idempotent-replayed"]], [
      202,
      '{"id":"msg_0"}',
      "true",
    ]);
    assert.throws(
      () =>
        webhookAnswer(
          { accepted: false, previous: { ...previous, bodyHash: "other" } },
          accepted,
          "/webhook",
        ),
      { code: "ERR_RELAY_IDEMPOTENCY_CONFLICT" },
    );
  });
});
