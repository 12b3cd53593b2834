import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AuthError } from "../../lib/auth/mod.ts";
import { ConfigError } from "../../lib/config/mod.ts";
import { CryptoError } from "../../lib/crypto/mod.ts";
import { FilterSyntaxError, ODataError } from "../../lib/odata/mod.ts";
import { RelayError } from "../../lib/relay/mod.ts";
import { StorageError } from "../../lib/storage/mod.ts";
import { SyncError } from "../../lib/sync/mod.ts";
import { WaterError } from "../../lib/water/mod.ts";
import {
  ERROR_STATUS,
  type ErrorCode,
  errorResponse,
  errorStatuses,
  type ErrorStatusTable,
  HttpError,
  withErrorStatuses,
} from "../../lib/http/mod.ts";
import { errorBody, errorDetail, statusOf } from "../../lib/http/error_response.ts";
import { JSON_CONTENT_TYPE, jsonResponse } from "../../lib/http/json_response.ts";
import { AUTH_ERROR_STATUS, type AuthErrorCode } from "../../lib/auth/mod.ts";
import { METRICS_ERROR_STATUS } from "../../lib/metrics/mod.ts";
import { RELAY_ERROR_STATUS } from "../../lib/relay/mod.ts";
import { SYNC_ERROR_STATUS } from "../../lib/sync/mod.ts";
import { WATER_ERROR_STATUS } from "../../lib/water/mod.ts";

// Each table's completeness is the compiler's job: these lines stop
// compiling when lib/http adds a code without a status, or its table names a
// code none has; a module's table without one of its codes is refused too.
type Missing = Exclude<ErrorCode, keyof typeof ERROR_STATUS>;
type Extra = Exclude<keyof typeof ERROR_STATUS, ErrorCode>;
const noneMissing: [Missing] extends [never] ? true : Missing = true;
const noneExtra: [Extra] extends [never] ? true : Extra = true;
// @ts-expect-error a table without ERR_AUTH_THROTTLED is not the token service's ErrorStatusTable
const incomplete: ErrorStatusTable<AuthErrorCode> = withoutCode(
  AUTH_ERROR_STATUS,
  "ERR_AUTH_THROTTLED",
);

function withoutCode<T extends object, K extends keyof T>(table: T, code: K): Omit<T, K> {
  const copy: Partial<T> = { ...table };
  delete copy[code];
  return copy as Omit<T, K>;
}

/** Every module's statuses joined, as an app joins them. */
const ALL = errorStatuses(
  WATER_ERROR_STATUS,
  AUTH_ERROR_STATUS,
  SYNC_ERROR_STATUS,
  RELAY_ERROR_STATUS,
  METRICS_ERROR_STATUS,
);

/** An error of another domain: a code, and a position like a syntax error's. */
class PositionedError extends SyntaxError {
  readonly code = "ERR_ODATA_SYNTAX";
  readonly position = 7;
  constructor() {
    super("Cannot parse filter at position 7");
    this.name = "FilterSyntaxError";
  }
}

function codeIn(body: unknown): unknown {
  return (JSON.parse(String(body)) as { error: { code: unknown } }).error.code;
}

function withCode(code: string): Error {
  return Object.assign(new Error("coded"), { code });
}

describe("ERROR_STATUS and the modules' tables", () => {
  it("are complete in the compiler's eyes, and an incomplete table is refused", () => {
    assert.equal(noneMissing, true);
    assert.equal(noneExtra, true);
    assert.equal("ERR_AUTH_THROTTLED" in incomplete, false);
  });

  it("map every code to a 4xx or 5xx status, and agree where they share one (joined without a conflict)", () => {
    for (const [code, status] of ALL) {
      assert.ok(status >= 400 && status <= 599, `${code}: ${status}`);
    }
    assert.throws(() => errorStatuses(SYNC_ERROR_STATUS, { ERR_AUTH_INVALID_TOKEN: 403 }), {
      name: "TypeError",
      message: /ERR_AUTH_INVALID_TOKEN is 401 in one table and 403 in another/,
    });
  });

  const samples = [
    { error: new HttpError("ERR_HTTP_RATE_LIMITED", "slow down"), status: 429 },
    { error: new ODataError("ERR_ODATA_UNKNOWN_FIELD", "no such field"), status: 400 },
    { error: new FilterSyntaxError(3, "expected a value"), status: 400 },
    { error: new WaterError("ERR_WATER_NOT_FOUND", "gone"), status: 404 },
    { error: new AuthError("ERR_AUTH_INVALID_CLIENT", "who?"), status: 401 },
    { error: new SyncError("ERR_SYNC_REVISION_EXPIRED", "old"), status: 410 },
    { error: new RelayError("ERR_RELAY_QUEUE_FULL", "full"), status: 503 },
    { error: new CryptoError("ERR_CRYPTO_DECRYPT_FAILED", "no"), status: 500 },
    { error: new ConfigError("PORT", "bad"), status: 500 },
  ] as const;
  for (const c of samples) {
    it(`gives ${c.error.name} ${c.error.code} the status ${c.status} (with the modules' tables)`, () => {
      assert.equal(statusOf(c.error, ALL), c.status);
    });
  }

  it("knows only lib/http's codes and those below it without the modules' tables", () => {
    assert.equal(statusOf(new HttpError("ERR_HTTP_RATE_LIMITED", "x")), 429);
    assert.equal(statusOf(withCode("ERR_STORAGE_UNAVAILABLE")), 503);
    assert.equal(statusOf(new WaterError("ERR_WATER_NOT_FOUND", "gone")), 500);
  });
});

describe("withErrorStatuses()", () => {
  it("answers the errors its statuses know, thrown or rejected, and throws on the others", async () => {
    const handler = withErrorStatuses((request) => {
      if (request.path === "/sync") {
        throw new WaterError("ERR_WATER_NOT_FOUND", "no such collection");
      }
      if (request.path === "/async") {
        return Promise.reject(new SyncError("ERR_SYNC_BUSY", "busy", { retryAfterMs: 1500 }));
      }
      if (request.path === "/bug") throw new Error("a bug");
      return jsonResponse(200, {});
    }, ALL);
    const request = (path: string) =>
      ({
        method: "GET",
        path,
        query: "",
        headers: {},
        origin: "http://x",
        remoteAddress: "127.0.0.1",
        body: { text: () => Promise.resolve(""), bytes: () => Promise.resolve(new Uint8Array()) },
      }) as unknown as Parameters<typeof handler>[0];
    const missing = await handler(request("/sync"));
    assert.equal(missing.status, 404);
    assert.equal(codeIn(missing.body), "ERR_WATER_NOT_FOUND");
    const busy = await handler(request("/async"));
    assert.deepEqual([busy.status, busy.headers?.["retry-after"]], [429, "2"]);
    assert.throws(
      () => handler(request("/bug")),
      { message: "a bug" },
      "an internal error goes on, to be logged",
    );
    assert.equal((await handler(request("/ok"))).status, 200);
  });
});

describe("statusOf()", () => {
  it("maps every code of the tables to its status", () => {
    for (const [code, status] of Object.entries(ERROR_STATUS)) {
      assert.equal(statusOf(withCode(code)), status, code);
    }
    for (const [code, status] of ALL) assert.equal(statusOf(withCode(code), ALL), status, code);
  });

  it("reads the code of an HttpError", () => {
    assert.equal(statusOf(new HttpError("ERR_HTTP_RATE_LIMITED", "slow down")), 429);
  });

  const unknown = [
    { name: "gives 500 for a plain Error", error: new Error("boom") },
    { name: "gives 500 for an unknown code", error: withCode("ERR_SOMETHING_ELSE") },
    { name: "gives 500 for a system error code", error: withCode("ENOENT") },
    {
      name: "gives 500 for a code that names a property of every object",
      error: withCode("constructor"),
    },
    {
      name: "gives 500 for a non-string code",
      error: Object.assign(new Error("x"), { code: 404 }),
    },
    { name: "gives 500 for a thrown string", error: "ERR_HTTP_NOT_FOUND" },
    { name: "gives 500 for null", error: null },
    { name: "gives 500 for undefined", error: undefined },
  ] as const;
  for (const c of unknown) it(c.name, () => assert.equal(statusOf(c.error), 500));
});

describe("errorDetail()", () => {
  it("gives the code and message of a known error", () => {
    assert.deepEqual(errorDetail(new HttpError("ERR_HTTP_NOT_FOUND", "no such thing")), {
      code: "ERR_HTTP_NOT_FOUND",
      message: "no such thing",
    });
  });

  it("adds the target when the error has one", () => {
    const detail = errorDetail(new HttpError("ERR_HTTP_MALFORMED_URL", "bad", { target: "$top" }));
    assert.equal(detail.target, "$top");
  });

  it("adds the position as innererror", () => {
    assert.deepEqual(errorDetail(new PositionedError(), ALL).innererror, { position: 7 });
  });

  const internal = [
    { name: "hides a plain Error", error: new Error("secret path /etc/passwd") },
    { name: "hides a thrown string", error: "secret string" },
    { name: "hides an error with an unknown code", error: withCode("ERR_SECRET") },
    {
      name: "hides an error whose code is answered 500",
      error: new ConfigError("PORT", "secret value"),
    },
    {
      name: "hides a non-Error object even with a known code",
      error: { code: "ERR_HTTP_NOT_FOUND", message: "secret" },
    },
  ] as const;
  for (const c of internal) {
    it(c.name, () => {
      const detail = errorDetail(c.error);
      assert.equal(detail.code, "ERR_INTERNAL");
      assert.equal(detail.message.includes("secret"), false);
      assert.equal(detail.target, undefined);
    });
  }
});

describe("errorBody()", () => {
  it("renders {error, errors: [error]} with code, message and target", () => {
    const error = new HttpError("ERR_HTTP_MALFORMED_URL", "bad escape", { target: "$top" });
    const body: unknown = JSON.parse(errorBody(error));
    const detail = { code: "ERR_HTTP_MALFORMED_URL", message: "bad escape", target: "$top" };
    assert.deepEqual(body, { error: detail, errors: [detail] });
  });

  it("omits target and innererror when the error has neither", () => {
    const body: unknown = JSON.parse(errorBody(new HttpError("ERR_HTTP_NOT_FOUND", "gone")));
    const detail = { code: "ERR_HTTP_NOT_FOUND", message: "gone" };
    assert.deepEqual(body, { error: detail, errors: [detail] });
  });

  it("renders the position as innererror.position", () => {
    const body: unknown = JSON.parse(errorBody(new PositionedError(), ALL));
    const detail = {
      code: "ERR_ODATA_SYNTAX",
      message: "Cannot parse filter at position 7",
      innererror: { position: 7 },
    };
    assert.deepEqual(body, { error: detail, errors: [detail] });
  });

  it("does not leak the message of an unknown error", () => {
    const text = errorBody(new Error("secret-db-password"));
    assert.equal(text.includes("secret-db-password"), false);
    const body = JSON.parse(text) as { error: { code: string } };
    assert.equal(body.error.code, "ERR_INTERNAL");
  });
});

describe("errorResponse()", () => {
  it("uses the status of the error's code", () => {
    assert.equal(errorResponse(new HttpError("ERR_HTTP_UNSUPPORTED_MEDIA_TYPE", "x")).status, 415);
  });

  it("sets the JSON content type", () => {
    const response = errorResponse(new HttpError("ERR_HTTP_NOT_FOUND", "x"));
    assert.equal(response.headers?.["content-type"], JSON_CONTENT_TYPE);
  });

  it("puts the error body in the response", () => {
    const error = new HttpError("ERR_HTTP_NOT_FOUND", "x");
    assert.equal(errorResponse(error).body, errorBody(error));
  });

  it("says Retry-After in whole seconds (at least 1) from an error's retryAfterMs, and WWW-Authenticate from its challenge", () => {
    assert.equal(
      errorResponse(new SyncError("ERR_SYNC_BUSY", "x", { retryAfterMs: 1000 }), ALL).headers
        ?.["retry-after"],
      "1",
    );
    assert.equal(
      errorResponse(new SyncError("ERR_SYNC_BUSY", "x", { retryAfterMs: 2001 }), ALL).headers
        ?.["retry-after"],
      "3",
    );
    assert.equal(
      errorResponse(new RelayError("ERR_RELAY_QUEUE_FULL", "x", { retryAfterMs: 10 }), ALL).headers
        ?.["retry-after"],
      "1",
    );
    const refused = errorResponse(
      new AuthError("ERR_AUTH_INVALID_TOKEN", "x", {
        challenge: 'Bearer realm="r", error="invalid_token"',
      }),
      ALL,
    );
    assert.deepEqual(refused.headers, {
      "www-authenticate": 'Bearer realm="r", error="invalid_token"',
      "content-type": JSON_CONTENT_TYPE,
    });
  });

  it("answers a store that is away 503 with Retry-After from its data, and a corrupt one 500 without", () => {
    const away = errorResponse(new StorageError("ERR_STORAGE_UNAVAILABLE", "x"), ALL);
    assert.equal(away.status, 503);
    assert.equal(away.headers?.["retry-after"], "1");
    const later = errorResponse(
      new StorageError("ERR_STORAGE_UNAVAILABLE", "x", { retryAfterMs: 4500 }),
      ALL,
    );
    assert.equal(later.headers?.["retry-after"], "5");
    const corrupt = errorResponse(new StorageError("ERR_STORAGE_CORRUPT", "x"), ALL);
    assert.equal(corrupt.status, 500);
    assert.equal(corrupt.headers?.["retry-after"], undefined);
    assert.equal("headers" in new StorageError("ERR_STORAGE_UNAVAILABLE", "x"), false);
  });

  it("carries a retry-after header over", () => {
    const error = new HttpError("ERR_HTTP_RATE_LIMITED", "x", { headers: { "retry-after": "3" } });
    assert.equal(errorResponse(error).headers?.["retry-after"], "3");
  });

  it("carries an allow header over", () => {
    const error = new HttpError("ERR_HTTP_METHOD_NOT_ALLOWED", "x", {
      headers: { allow: "GET, HEAD" },
    });
    assert.equal(errorResponse(error).headers?.["allow"], "GET, HEAD");
  });

  it("lower-cases the names of carried headers", () => {
    const error = new HttpError("ERR_HTTP_UNAUTHORIZED", "x", {
      headers: { "WWW-Authenticate": "ApiKey" },
    });
    assert.deepEqual(errorResponse(error).headers, {
      "www-authenticate": "ApiKey",
      "content-type": JSON_CONTENT_TYPE,
    });
  });

  it("ignores header values that are not strings", () => {
    const error = Object.assign(withCode("ERR_HTTP_BAD_REQUEST"), {
      headers: { "x-n": 1, "x-s": "ok" },
    });
    assert.deepEqual(errorResponse(error).headers, {
      "x-s": "ok",
      "content-type": JSON_CONTENT_TYPE,
    });
  });

  it("ignores a headers property that is not an object", () => {
    const error = Object.assign(withCode("ERR_HTTP_BAD_REQUEST"), { headers: "x-a: 1" });
    assert.deepEqual(errorResponse(error).headers, { "content-type": JSON_CONTENT_TYPE });
  });

  it("does not let the error override the content type", () => {
    const error = new HttpError("ERR_HTTP_BAD_REQUEST", "x", {
      headers: { "content-type": "text/html" },
    });
    assert.equal(errorResponse(error).headers?.["content-type"], JSON_CONTENT_TYPE);
  });

  it("answers a plain Error with 500 and ERR_INTERNAL, without its message", () => {
    const response = errorResponse(new Error("secret-stack-detail"));
    assert.equal(response.status, 500);
    assert.equal(String(response.body).includes("secret-stack-detail"), false);
    assert.equal(codeIn(response.body), "ERR_INTERNAL");
  });

  it("answers a thrown string with 500 and ERR_INTERNAL, without its text", () => {
    const response = errorResponse("secret-string");
    assert.equal(response.status, 500);
    assert.equal(String(response.body).includes("secret-string"), false);
    assert.equal(codeIn(response.body), "ERR_INTERNAL");
  });

  it("drops the headers of an error that becomes a 500", () => {
    const error = Object.assign(new Error("x"), { headers: { "x-leak": "secret" } });
    assert.deepEqual(errorResponse(error).headers, { "content-type": JSON_CONTENT_TYPE });
  });
});

describe("HttpError", () => {
  it("sets name, code, target and headers", () => {
    const error = new HttpError("ERR_HTTP_FORBIDDEN", "no", {
      target: "x-api-key",
      headers: { a: "b" },
    });
    assert.ok(error instanceof Error);
    assert.equal(error.name, "HttpError");
    assert.equal(error.code, "ERR_HTTP_FORBIDDEN");
    assert.equal(error.target, "x-api-key");
    assert.deepEqual(error.headers, { a: "b" });
  });

  it("defaults to no headers and no target", () => {
    const error = new HttpError("ERR_HTTP_FORBIDDEN", "no");
    assert.deepEqual(error.headers, {});
    assert.equal(error.target, undefined);
    assert.equal("cause" in error, false);
  });

  it("passes the cause through", () => {
    const cause = new Error("inner");
    assert.equal(new HttpError("ERR_HTTP_BAD_REQUEST", "outer", { cause }).cause, cause);
  });
});

describe("jsonResponse()", () => {
  it("serializes the value with the JSON content type", () => {
    assert.deepEqual(jsonResponse(201, { a: [1, "x"] }), {
      status: 201,
      headers: { "content-type": JSON_CONTENT_TYPE },
      body: '{"a":[1,"x"]}',
    });
  });

  it("keeps extra headers but not a conflicting content type", () => {
    const response = jsonResponse(200, null, { link: "<x>", "content-type": "text/plain" });
    assert.deepEqual(response.headers, { link: "<x>", "content-type": JSON_CONTENT_TYPE });
  });
});
