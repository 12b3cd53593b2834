import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { Webhook } from "standardwebhooks";
import { newWebhookSecret } from "../../lib/crypto/webhook_signature.ts";
import {
  parseWebhookSecret,
  pooledRandom,
  signWebhook,
  verifyWebhook,
} from "../../lib/crypto/mod.ts";
import type { WebhookHeaders } from "../../lib/crypto/mod.ts";

// The vector every Standard Webhooks reference library hard-codes.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TIMESTAMP = 1614265330;
const BODY = '{"test": 2432232314}';
const SIGNATURE = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
const MAC = SIGNATURE.slice(3);

const INVALID = { name: "CryptoError", code: "ERR_CRYPTO_SIGNATURE_INVALID" } as const;
const random = pooledRandom();
const key = parseWebhookSecret(SECRET);

/** A fixed "now" inside the tolerance of the vector's timestamp. */
const AT_VECTOR = { now: TIMESTAMP + 10 } as const;

/** Headers in the shape the `standardwebhooks` package reads them. */
function packageHeaders(id: string, timestamp: number, signature: string): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestamp),
    "webhook-signature": signature,
  };
}

/** The current time in unix seconds: `standardwebhooks` checks against its own clock. */
function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

describe("parseWebhookSecret()", () => {
  it("decodes the reference secret to its 24 bytes", () => {
    const expected = Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64");
    assert.deepEqual(key, new Uint8Array(expected));
    assert.equal(key.length, 24);
  });

  it("gives a plain Uint8Array with memory of its own", () => {
    const parsed = parseWebhookSecret(SECRET);
    assert.equal(Object.getPrototypeOf(parsed), Uint8Array.prototype);
    assert.equal(parsed.byteOffset, 0);
    assert.equal(parsed.buffer.byteLength, 24);
  });

  it("accepts 64 bytes, with or without base64 padding", () => {
    const text = Buffer.alloc(64, 7).toString("base64");
    assert.ok(text.endsWith("=="));
    assert.equal(parseWebhookSecret(`whsec_${text}`).length, 64);
    assert.equal(parseWebhookSecret(`whsec_${text.replace(/=+$/, "")}`).length, 64);
  });

  const bad = [
    { name: "refuses a secret without a prefix", secret: "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
    { name: "refuses another prefix", secret: "whsk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
    { name: "refuses an upper-case prefix", secret: "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
    { name: "refuses the prefix alone", secret: "whsec_" },
    { name: "refuses text that is not base64", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa$w" },
    { name: "refuses the base64url alphabet", secret: `whsec_${"_-".repeat(16)}` },
    { name: "refuses inner whitespace", secret: "whsec_MfKQ9r8GKYqrTwjU PD8ILPZIo2LaLaSw" },
    { name: "refuses 23 bytes", secret: `whsec_${Buffer.alloc(23, 1).toString("base64")}` },
    { name: "refuses 65 bytes", secret: `whsec_${Buffer.alloc(65, 1).toString("base64")}` },
    { name: "refuses misplaced padding", secret: `whsec_${"A".repeat(30)}=A` },
    { name: "refuses stray low bits in the last character", secret: `whsec_${"A".repeat(42)}B=` },
  ] as const;
  for (const c of bad) {
    it(`${c.name} with ERR_CRYPTO_INVALID_KEY`, () => {
      assert.throws(() => parseWebhookSecret(c.secret), {
        name: "CryptoError",
        code: "ERR_CRYPTO_INVALID_KEY",
      });
    });
  }

  it("never puts the secret in its message", () => {
    const secret = `whsec_${Buffer.alloc(23, 9).toString("base64")}`;
    assert.throws(() => parseWebhookSecret(secret), (error: unknown) => {
      assert.ok(error instanceof Error);
      assert.ok(!error.message.includes(secret.slice(6)), error.message);
      assert.match(error.message, /^Cannot use the webhook secret: /);
      return true;
    });
  });

  it("refuses a value that is not a string with TypeError", () => {
    assert.throws(() => parseWebhookSecret(42 as unknown as string), { name: "TypeError" });
  });
});

describe("newWebhookSecret()", () => {
  it("encodes 32 random bytes after the prefix", () => {
    const secret = newWebhookSecret((size) => new Uint8Array(size).fill(0xfb));
    assert.equal(secret, `whsec_${Buffer.alloc(32, 0xfb).toString("base64")}`);
  });

  it("makes secrets that parseWebhookSecret() and standardwebhooks accept", () => {
    const secret = newWebhookSecret(random);
    assert.equal(parseWebhookSecret(secret).length, 32);
    const now = nowSeconds();
    const signature = signWebhook(parseWebhookSecret(secret), "msg_1", now, BODY);
    assert.deepEqual(
      new Webhook(secret).verify(BODY, packageHeaders("msg_1", now, signature)),
      JSON.parse(BODY),
    );
  });

  it("makes a different secret each time", () => {
    assert.notEqual(newWebhookSecret(random), newWebhookSecret(random));
  });

  it("refuses a random source that gives too few bytes with RangeError", () => {
    assert.throws(() => newWebhookSecret((size) => new Uint8Array(size - 1)), {
      name: "RangeError",
    });
  });
});

describe("signWebhook()", () => {
  it("signs the reference vector", () => {
    assert.equal(signWebhook(key, ID, TIMESTAMP, BODY), SIGNATURE);
  });

  it("signs a body given as bytes like the same text", () => {
    assert.equal(signWebhook(key, ID, TIMESTAMP, new TextEncoder().encode(BODY)), SIGNATURE);
  });

  it("signs a key given in a one-element list like the key alone", () => {
    assert.equal(signWebhook([key], ID, TIMESTAMP, BODY), SIGNATURE);
  });

  it("signs a view of a larger buffer by its own bytes only", () => {
    const whole = new TextEncoder().encode(`xx${BODY}yy`);
    assert.equal(signWebhook(key, ID, TIMESTAMP, whole.subarray(2, whole.length - 2)), SIGNATURE);
  });

  it("gives one space-separated v1 signature per key, in order", () => {
    const other = parseWebhookSecret(newWebhookSecret(random));
    const header = signWebhook([key, other], ID, TIMESTAMP, BODY);
    const entries = header.split(" ");
    assert.equal(entries.length, 2);
    assert.equal(entries[0], SIGNATURE);
    assert.equal(entries[1], signWebhook(other, ID, TIMESTAMP, BODY));
  });

  it("signs an empty body", () => {
    assert.match(signWebhook(key, ID, TIMESTAMP, ""), /^v1,[A-Za-z0-9+/]{43}=$/);
  });

  it("is verified by standardwebhooks", () => {
    const now = nowSeconds();
    const signature = signWebhook(key, ID, now, BODY);
    const payload = new Webhook(SECRET).verify(BODY, packageHeaders(ID, now, signature));
    assert.deepEqual(payload, { test: 2432232314 });
  });

  it("is verified by standardwebhooks for a UTF-8 body given as bytes", () => {
    const now = nowSeconds();
    const text = '{"name":"Zoë 🌊","n":1}';
    const signature = signWebhook(key, ID, now, new TextEncoder().encode(text));
    const payload = new Webhook(SECRET).verify(
      Buffer.from(text, "utf8"),
      packageHeaders(ID, now, signature),
    );
    assert.deepEqual(payload, JSON.parse(text));
  });

  it("makes a two-key header that standardwebhooks verifies with either key", () => {
    const second = newWebhookSecret(random);
    const now = nowSeconds();
    const header = signWebhook([key, parseWebhookSecret(second)], ID, now, BODY);
    for (const secret of [SECRET, second]) {
      assert.deepEqual(
        new Webhook(secret).verify(BODY, packageHeaders(ID, now, header)),
        JSON.parse(BODY),
      );
    }
    const stranger = new Webhook(newWebhookSecret(random));
    assert.throws(() => stranger.verify(BODY, packageHeaders(ID, now, header)));
  });

  const badArguments = [
    { name: "an id with a dot", id: "msg.1", timestamp: TIMESTAMP, error: "TypeError" },
    { name: "an empty id", id: "", timestamp: TIMESTAMP, error: "TypeError" },
    { name: "a negative timestamp", id: ID, timestamp: -1, error: "RangeError" },
    { name: "a fractional timestamp", id: ID, timestamp: 1.5, error: "RangeError" },
    { name: "a timestamp of NaN", id: ID, timestamp: Number.NaN, error: "RangeError" },
    { name: "an unsafe timestamp", id: ID, timestamp: 2 ** 53, error: "RangeError" },
    { name: "a timestamp given as text", id: ID, timestamp: "1614265330", error: "TypeError" },
  ] as const;
  for (const c of badArguments) {
    it(`refuses ${c.name} with ${c.error}`, () => {
      assert.throws(
        () => signWebhook(key, c.id, c.timestamp as unknown as number, BODY),
        { name: c.error },
      );
    });
  }

  it("refuses an empty list of keys with RangeError", () => {
    assert.throws(() => signWebhook([], ID, TIMESTAMP, BODY), { name: "RangeError" });
  });

  it("refuses an empty key or a key that is not bytes with TypeError", () => {
    assert.throws(() => signWebhook(new Uint8Array(0), ID, TIMESTAMP, BODY), { name: "TypeError" });
    assert.throws(() => signWebhook([key, "k" as unknown as Uint8Array], ID, TIMESTAMP, BODY), {
      name: "TypeError",
    });
    assert.throws(() => signWebhook(SECRET as unknown as Uint8Array, ID, TIMESTAMP, BODY), {
      name: "TypeError",
    });
  });

  it("refuses a body that is neither text nor bytes with TypeError", () => {
    assert.throws(() => signWebhook(key, ID, TIMESTAMP, { test: 1 } as unknown as string), {
      name: "TypeError",
    });
  });
});

describe("verifyWebhook()", () => {
  const headers: WebhookHeaders = { id: ID, timestamp: String(TIMESTAMP), signature: SIGNATURE };

  it("accepts the reference vector", () => {
    assert.equal(verifyWebhook(key, headers, BODY, AT_VECTOR), undefined);
  });

  it("accepts the body as bytes", () => {
    verifyWebhook(key, headers, new TextEncoder().encode(BODY), AT_VECTOR);
  });

  it("accepts what standardwebhooks signs", () => {
    const secret = newWebhookSecret(random);
    const signature = new Webhook(secret).sign(ID, new Date(TIMESTAMP * 1000), BODY);
    verifyWebhook(
      parseWebhookSecret(secret),
      { id: ID, timestamp: String(TIMESTAMP), signature },
      BODY,
      AT_VECTOR,
    );
  });

  it("accepts an empty body that was signed", () => {
    const signature = signWebhook(key, ID, TIMESTAMP, "");
    verifyWebhook(key, { ...headers, signature }, "", AT_VECTOR);
  });

  it("accepts a header in which one of several entries matches", () => {
    const wrong = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=";
    const signature = `${wrong} v2,${MAC} ${SIGNATURE} ${wrong}`;
    verifyWebhook(key, { ...headers, signature }, BODY, AT_VECTOR);
  });

  it("accepts when any of several keys matches", () => {
    const other = parseWebhookSecret(newWebhookSecret(random));
    verifyWebhook([other, key], headers, BODY, AT_VECTOR);
  });

  it("accepts timestamps exactly at the tolerance on either side", () => {
    verifyWebhook(key, headers, BODY, { now: TIMESTAMP + 300 });
    verifyWebhook(key, headers, BODY, { now: TIMESTAMP - 300 });
  });

  it("accepts a fractional now", () => {
    verifyWebhook(key, headers, BODY, { now: TIMESTAMP + 299.9 });
  });

  it("honours a custom tolerance", () => {
    verifyWebhook(key, headers, BODY, { now: TIMESTAMP + 3600, toleranceSeconds: 3600 });
    assert.throws(
      () => verifyWebhook(key, headers, BODY, { now: TIMESTAMP + 11, toleranceSeconds: 10 }),
      INVALID,
    );
  });

  const rejected: readonly {
    readonly name: string;
    readonly headers: WebhookHeaders;
    readonly body?: string;
    readonly now?: number;
  }[] = [
    // From the Standard Webhooks reference libraries' negative tests, and more.
    { name: "a missing id", headers: { timestamp: String(TIMESTAMP), signature: SIGNATURE } },
    { name: "a missing timestamp", headers: { id: ID, signature: SIGNATURE } },
    { name: "a missing signature", headers: { id: ID, timestamp: String(TIMESTAMP) } },
    { name: "an empty id", headers: { ...headers, id: "" } },
    { name: "an undefined signature", headers: { ...headers, signature: undefined } },
    { name: "an id with a dot", headers: { ...headers, id: `${ID}.x` } },
    { name: "a timestamp that is not a number", headers: { ...headers, timestamp: "now" } },
    { name: "a timestamp with trailing text", headers: { ...headers, timestamp: `${TIMESTAMP}x` } },
    { name: "a negative timestamp", headers: { ...headers, timestamp: "-1614265330" } },
    { name: "a timestamp with an exponent", headers: { ...headers, timestamp: "1.6e9" } },
    { name: "a timestamp in milliseconds", headers: { ...headers, timestamp: `${TIMESTAMP}000` } },
    { name: "a timestamp more than 5 min + 1 s old", headers, now: TIMESTAMP + 301 },
    { name: "a timestamp more than 5 min + 1 s new", headers, now: TIMESTAMP - 301 },
    { name: "a v2 signature only", headers: { ...headers, signature: `v2,${MAC}` } },
    { name: "a v1a signature only", headers: { ...headers, signature: `v1a,${MAC}` } },
    {
      name: "a signature truncated to 8 characters",
      headers: { ...headers, signature: SIGNATURE.slice(0, 11) },
    },
    { name: "'v1,' alone", headers: { ...headers, signature: "v1," } },
    { name: "a signature without a version", headers: { ...headers, signature: MAC } },
    { name: "a signature with a space in it", headers: { ...headers, signature: `v1, ${MAC}` } },
    { name: "an upper-case version", headers: { ...headers, signature: `V1,${MAC}` } },
    { name: "a tampered body", headers, body: '{"test": 2432232315}' },
    { name: "a body with a trailing newline", headers, body: `${BODY}\n` },
    { name: "another id", headers: { ...headers, id: "msg_p5jXN8AQM9LWM0D4loKWxJel" } },
    {
      name: "a timestamp with a leading zero",
      headers: { ...headers, timestamp: `0${TIMESTAMP}` },
    },
  ];
  for (const c of rejected) {
    it(`refuses ${c.name} with ERR_CRYPTO_SIGNATURE_INVALID`, () => {
      assert.throws(
        () => verifyWebhook(key, c.headers, c.body ?? BODY, { now: c.now ?? AT_VECTOR.now }),
        INVALID,
      );
    });
  }

  it("refuses a signature made with another key", () => {
    const other = parseWebhookSecret(newWebhookSecret(random));
    assert.throws(() => verifyWebhook(other, headers, BODY, AT_VECTOR), INVALID);
  });

  it("agrees with standardwebhooks on tampered and foreign signatures", () => {
    const now = nowSeconds();
    const signature = signWebhook(key, ID, now, BODY);
    const webhook = new Webhook(SECRET);
    for (const body of ['{"test": 2432232315}', `${BODY} `]) {
      assert.throws(() => webhook.verify(body, packageHeaders(ID, now, signature)));
      assert.throws(
        () => verifyWebhook(key, { id: ID, timestamp: String(now), signature }, body, { now }),
        INVALID,
      );
    }
  });

  it("says why in its message, without the key or the expected signature", () => {
    assert.throws(
      () => verifyWebhook(key, { ...headers, signature: "v1,AAAA" }, BODY, AT_VECTOR),
      (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.equal(error.message, "Cannot verify the webhook: no v1 signature matches");
        assert.ok(!error.message.includes(MAC));
        return true;
      },
    );
  });

  it("refuses bad options with TypeError or RangeError", () => {
    assert.throws(() => verifyWebhook(key, headers, BODY, { now: Number.NaN }), {
      name: "TypeError",
    });
    assert.throws(
      () => verifyWebhook(key, headers, BODY, { now: TIMESTAMP, toleranceSeconds: -1 }),
      { name: "RangeError" },
    );
    assert.throws(() => verifyWebhook([], headers, BODY, AT_VECTOR), { name: "RangeError" });
  });
});
