import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import {
  authenticateApiKey,
  type AuthenticateOptions,
  indexApiKeys,
  parseApiKey,
} from "../../lib/http/mod.ts";
import { statusOf } from "../../lib/http/error_response.ts";
import { makeRequest } from "../_helpers/http.ts";

const SECRET = "s3cret-key";
const SECRET_HASH = sha256Hex(SECRET);
const APP = "https://app.example.org";

function options(extra: Partial<AuthenticateOptions> = {}): AuthenticateOptions {
  return {
    keys: indexApiKeys([parseApiKey("alice", SECRET), parseApiKey("bob", "other-key")]),
    keylessOrigins: new Set([APP]),
    ...extra,
  };
}

describe("parseApiKey()", () => {
  it("keeps the SHA-256 of a plain key and its name", () => {
    assert.deepEqual(parseApiKey("alice", SECRET), { name: "alice", hash: SECRET_HASH });
  });

  it("gives the same hash for a key given as 'sha256:<hex>'", () => {
    const hashed = parseApiKey("alice", `sha256:${SECRET_HASH}`);
    assert.equal(hashed.hash, parseApiKey("alice", SECRET).hash);
  });

  it("accepts upper-case hex and stores it in lower case", () => {
    assert.equal(parseApiKey("alice", `sha256:${SECRET_HASH.toUpperCase()}`).hash, SECRET_HASH);
  });

  it("trims the entry before hashing", () => {
    assert.equal(parseApiKey("alice", `  ${SECRET}\n`).hash, SECRET_HASH);
  });

  const invalid = [
    { name: "refuses an empty entry", entry: "" },
    { name: "refuses a blank entry", entry: "   " },
    { name: "refuses 'sha256:' alone", entry: "sha256:" },
    { name: "refuses 'sha256:' with non-hex text", entry: "sha256:xyz" },
    { name: "refuses 'sha256:' with 63 hex digits", entry: `sha256:${SECRET_HASH.slice(1)}` },
    { name: "refuses 'sha256:' with 65 hex digits", entry: `sha256:${SECRET_HASH}0` },
  ] as const;
  for (const c of invalid) {
    it(`${c.name} with RangeError`, () => {
      assert.throws(() => parseApiKey("k", c.entry), { name: "RangeError" });
    });
  }
});

describe("indexApiKeys()", () => {
  it("indexes keys by hash", () => {
    const alice = parseApiKey("alice", SECRET);
    const bob = parseApiKey("bob", "b");
    const index = indexApiKeys([alice, bob]);
    assert.equal(index.size, 2);
    assert.equal(index.get(SECRET_HASH), alice);
    assert.equal(index.get(sha256Hex("b")), bob);
  });
});

describe("authenticateApiKey()", () => {
  it("identifies the caller of a valid key by the key's name", () => {
    const request = makeRequest({ headers: { "x-api-key": SECRET } });
    assert.deepEqual(authenticateApiKey(request, options()), { kind: "key", id: "alice" });
  });

  it("ignores whitespace around a presented key", () => {
    const request = makeRequest({ headers: { "x-api-key": ` ${SECRET} ` } });
    assert.deepEqual(authenticateApiKey(request, options()), { kind: "key", id: "alice" });
  });

  it("accepts a plain key configured in its sha256 form", () => {
    const keys = indexApiKeys([parseApiKey("hashed", `sha256:${SECRET_HASH}`)]);
    const request = makeRequest({ method: "POST", headers: { "x-api-key": SECRET } });
    assert.deepEqual(authenticateApiKey(request, { keys }), { kind: "key", id: "hashed" });
  });

  const missing = [
    { name: "refuses a request without a key with ERR_HTTP_UNAUTHORIZED", headers: {} },
    { name: "refuses an empty key with ERR_HTTP_UNAUTHORIZED", headers: { "x-api-key": "  " } },
    {
      name: "refuses a keyless POST from an allowed origin with ERR_HTTP_UNAUTHORIZED",
      method: "POST",
      headers: { origin: APP },
    },
    {
      name: "refuses a keyless GET from another origin with ERR_HTTP_UNAUTHORIZED",
      headers: { origin: "https://x.org" },
    },
  ] as const;
  for (const c of missing) {
    it(c.name, () => {
      const request = makeRequest({ method: "method" in c ? c.method : "GET", headers: c.headers });
      assert.throws(() => authenticateApiKey(request, options()), {
        name: "HttpError",
        code: "ERR_HTTP_UNAUTHORIZED",
        target: "x-api-key",
      });
    });
  }

  it("maps a missing key to status 401", () => {
    let caught: unknown;
    try {
      authenticateApiKey(makeRequest(), options());
    } catch (error) {
      caught = error;
    }
    assert.equal(statusOf(caught), 401);
  });

  it("refuses an unknown key with ERR_HTTP_FORBIDDEN (403)", () => {
    const request = makeRequest({ headers: { "x-api-key": "guess" } });
    let caught: unknown;
    try {
      authenticateApiKey(request, options());
    } catch (error) {
      caught = error;
    }
    assert.equal((caught as { code?: unknown }).code, "ERR_HTTP_FORBIDDEN");
    assert.equal((caught as { target?: unknown }).target, "x-api-key");
    assert.equal(statusOf(caught), 403);
  });

  it("refuses an unknown key even from an allowed origin", () => {
    const request = makeRequest({ headers: { "x-api-key": "guess", origin: APP } });
    assert.throws(() => authenticateApiKey(request, options()), { code: "ERR_HTTP_FORBIDDEN" });
  });

  const keyless = [
    { name: "identifies a keyless GET from an allowed origin by the origin", method: "GET" },
    { name: "identifies a keyless HEAD from an allowed origin by the origin", method: "HEAD" },
  ] as const;
  for (const c of keyless) {
    it(c.name, () => {
      const request = makeRequest({ method: c.method, headers: { origin: APP } });
      assert.deepEqual(authenticateApiKey(request, options()), { kind: "origin", id: APP });
    });
  }

  it("prefers a presented key over the origin", () => {
    const request = makeRequest({ headers: { origin: APP, "x-api-key": SECRET } });
    assert.deepEqual(authenticateApiKey(request, options()), { kind: "key", id: "alice" });
  });

  it("allows no keyless origins by default", () => {
    const request = makeRequest({ headers: { origin: APP } });
    assert.throws(
      () => authenticateApiKey(request, { keys: options().keys }),
      { code: "ERR_HTTP_UNAUTHORIZED" },
    );
  });

  it("reads the key from a custom header", () => {
    const request = makeRequest({ headers: { authorization: SECRET } });
    assert.deepEqual(authenticateApiKey(request, options({ header: "authorization" })), {
      kind: "key",
      id: "alice",
    });
  });

  it("ignores x-api-key when a custom header is configured, naming the custom one", () => {
    const request = makeRequest({ headers: { "x-api-key": SECRET } });
    assert.throws(() => authenticateApiKey(request, options({ header: "x-token" })), {
      code: "ERR_HTTP_UNAUTHORIZED",
      target: "x-token",
    });
  });

  it("matches a custom header name in any case", () => {
    const request = makeRequest({ headers: { "x-token": SECRET } });
    assert.deepEqual(authenticateApiKey(request, options({ header: "X-Token" })), {
      kind: "key",
      id: "alice",
    });
  });
});
