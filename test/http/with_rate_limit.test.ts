import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type BodyChunks,
  type Handler,
  HttpError,
  type HttpResponse,
  RateLimiter,
  withCors,
  withRateLimit,
} from "../../lib/http/mod.ts";
import { statusOf } from "../../lib/http/error_response.ts";
import { bodyText, callHandler, makeRequest } from "../_helpers/http.ts";

/** One request at a time per key, no rate limit. */
function singleFlight(): RateLimiter {
  return new RateLimiter({ ratePerSecond: 0, maxConcurrent: 1, now: () => 0 });
}

/** Whether the key could start a request now; the test permit is released at once. */
function canAcquire(limiter: RateLimiter, key: string): boolean {
  const decision = limiter.acquire(key);
  if (decision.ok) decision.release();
  return decision.ok;
}

const byKey = (): string => "k";

function streaming(chunks: readonly string[], state: { finished: boolean }): Handler {
  return () => ({
    status: 200,
    body: (async function* (): AsyncGenerator<string> {
      try {
        yield* chunks;
      } finally {
        state.finished = true;
      }
    })(),
  });
}

describe("withRateLimit()", () => {
  it("passes an accepted request to the handler and returns its response", async () => {
    const response: HttpResponse = { status: 200, body: "ok" };
    const handler = withRateLimit(() => response, singleFlight(), byKey);
    assert.equal(await handler(makeRequest()), response);
  });

  it("gives identify the request and counts against the key it returns", async () => {
    const limiter = singleFlight();
    const request = makeRequest({ headers: { "x-user": "u1" } });
    let seen: unknown;
    let inside = true;
    const handler = withRateLimit(
      () => {
        inside = canAcquire(limiter, "u1");
        return { status: 204 };
      },
      limiter,
      (r) => {
        seen = r;
        return r.headers["x-user"] ?? "";
      },
    );
    await handler(request);
    assert.equal(seen, request);
    assert.equal(inside, false);
  });

  it("refuses a request over the rate with ERR_HTTP_RATE_LIMITED and retry-after", async () => {
    const limiter = new RateLimiter({ ratePerSecond: 2, maxConcurrent: 0, now: () => 0 });
    const handler = withRateLimit(() => ({ status: 204 }), limiter, byKey);
    await handler(makeRequest());
    await handler(makeRequest());
    await assert.rejects(callHandler(handler, makeRequest()), {
      name: "HttpError",
      code: "ERR_HTTP_RATE_LIMITED",
      headers: {
        "retry-after": "1",
        "ratelimit-policy": "2;w=1",
        "ratelimit-limit": "2",
        "ratelimit-remaining": "0",
        "ratelimit-reset": "1",
      },
    });
  });

  it("tells the quota in RateLimit-* headers on every answer: a success, a client error, a refusal", async () => {
    const clock = { t: 0 };
    const limiter = new RateLimiter({
      ratePerSecond: 2,
      burst: 3,
      maxConcurrent: 0,
      now: () => clock.t,
    });
    const handler = withRateLimit(
      (request) => {
        if (request.path === "/bad") {
          throw new HttpError("ERR_HTTP_BAD_REQUEST", "Cannot read the query: bad", {
            target: "$top",
          });
        }
        return { status: 200, headers: { "content-type": "text/plain" }, body: "ok" };
      },
      limiter,
      byKey,
    );
    const ok = await callHandler(handler, makeRequest());
    assert.deepEqual(ok.headers, {
      "content-type": "text/plain",
      "ratelimit-policy": "3;w=2",
      "ratelimit-limit": "3",
      "ratelimit-remaining": "2",
      "ratelimit-reset": "1",
    });
    const bad = await callHandler(handler, makeRequest({ path: "/bad" }));
    assert.equal(bad.status, 400);
    assert.equal(bad.headers?.["ratelimit-remaining"], "1");
    assert.match(String(bad.body), /ERR_HTTP_BAD_REQUEST/);
    await callHandler(handler, makeRequest());
    await assert.rejects(callHandler(handler, makeRequest()), {
      code: "ERR_HTTP_RATE_LIMITED",
      headers: {
        "retry-after": "1",
        "ratelimit-policy": "3;w=2",
        "ratelimit-limit": "3",
        "ratelimit-remaining": "0",
        "ratelimit-reset": "2",
      },
    });
    clock.t = 1500;
    assert.equal(
      (await callHandler(handler, makeRequest())).headers?.["ratelimit-remaining"],
      "2",
      "3 tokens back after 1.5 s, one spent",
    );
  });

  it("lets an internal error through as thrown, to be logged, and sends no quota without a rate", async () => {
    const limiter = new RateLimiter({ ratePerSecond: 2, maxConcurrent: 1, now: () => 0 });
    const broken = withRateLimit(
      () => {
        throw new Error("disk on fire");
      },
      limiter,
      byKey,
    );
    await assert.rejects(callHandler(broken, makeRequest()), { message: "disk on fire" });
    const response: HttpResponse = { status: 200, body: "ok" };
    assert.equal(
      await withRateLimit(() => response, singleFlight(), byKey)(makeRequest()),
      response,
    );
  });

  it("refuses a concurrent request with ERR_HTTP_RATE_LIMITED", async () => {
    const limiter = singleFlight();
    const held = limiter.acquire("k");
    assert.ok(held.ok);
    const handler = withRateLimit(() => ({ status: 204 }), limiter, byKey);
    await assert.rejects(callHandler(handler, makeRequest()), {
      code: "ERR_HTTP_RATE_LIMITED",
      headers: { "retry-after": "1" },
    });
  });

  it("maps a refusal to status 429", async () => {
    const limiter = singleFlight();
    limiter.acquire("k");
    const handler = withRateLimit(() => ({ status: 204 }), limiter, byKey);
    const error = await callHandler(handler, makeRequest()).catch((e: unknown) => e);
    assert.equal(statusOf(error), 429);
  });

  it("raises identify errors before the limiter is consulted", async () => {
    const limiter = new RateLimiter({ ratePerSecond: 1, burst: 1, maxConcurrent: 0, now: () => 0 });
    let called = false;
    const handler = withRateLimit(
      () => {
        called = true;
        return { status: 204 };
      },
      limiter,
      () => {
        throw new HttpError("ERR_HTTP_UNAUTHORIZED", "no key");
      },
    );
    await assert.rejects(callHandler(handler, makeRequest()), { code: "ERR_HTTP_UNAUTHORIZED" });
    assert.equal(called, false);
    assert.equal(canAcquire(limiter, "k"), true); // the one token is still there
  });

  it("releases the permit after a plain response", async () => {
    const limiter = singleFlight();
    await withRateLimit(() => ({ status: 200, body: "ok" }), limiter, byKey)(makeRequest());
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("releases the permit after a bytes response", async () => {
    const limiter = singleFlight();
    const bytes: Handler = () => ({ status: 200, body: new Uint8Array([1]) });
    const handler = withRateLimit(bytes, limiter, byKey);
    await handler(makeRequest());
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("releases the permit after a response without a body", async () => {
    const limiter = singleFlight();
    await withRateLimit(() => ({ status: 204 }), limiter, byKey)(makeRequest());
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("releases the permit after the handler throws, and rethrows", async () => {
    const limiter = singleFlight();
    const handler = withRateLimit(
      () => {
        throw new HttpError("ERR_HTTP_NOT_FOUND", "gone");
      },
      limiter,
      byKey,
    );
    await assert.rejects(callHandler(handler, makeRequest()), { code: "ERR_HTTP_NOT_FOUND" });
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("holds the permit while a streamed body is unread", async () => {
    const limiter = singleFlight();
    await withRateLimit(streaming(["a"], { finished: false }), limiter, byKey)(makeRequest());
    assert.equal(canAcquire(limiter, "k"), false);
  });

  it("passes the streamed chunks through and releases when the stream finishes", async () => {
    const limiter = singleFlight();
    const handler = withRateLimit(streaming(["a", "b", "c"], { finished: false }), limiter, byKey);
    const response = await handler(makeRequest());
    assert.equal(await bodyText(response), "abc");
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("releases the permit when a streamed body throws", async () => {
    const limiter = singleFlight();
    const failing: Handler = () => ({
      status: 200,
      body: (async function* (): AsyncGenerator<string> {
        yield "a";
        throw new Error("disk gone");
      })(),
    });
    const response = await withRateLimit(failing, limiter, byKey)(makeRequest());
    await assert.rejects(bodyText(response), { message: "disk gone" });
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("releases the permit when a streamed body is abandoned with return()", async () => {
    const limiter = singleFlight();
    const state = { finished: false };
    const handler = withRateLimit(streaming(["a", "b", "c"], state), limiter, byKey);
    const response = await handler(makeRequest());
    const iterator = (response.body as BodyChunks)[Symbol.asyncIterator]();
    assert.deepEqual(await iterator.next(), { done: false, value: "a" });
    assert.equal(canAcquire(limiter, "k"), false);
    await iterator.return?.();
    assert.equal(canAcquire(limiter, "k"), true);
    assert.equal(state.finished, true);
  });

  it("ends an abandoned stream whose iterator has no return()", async () => {
    const limiter = singleFlight();
    const bare: BodyChunks = {
      [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: false, value: "x" }) }),
    };
    const handler = withRateLimit(() => ({ status: 200, body: bare }), limiter, byKey);
    const response = await handler(makeRequest());
    const iterator = (response.body as BodyChunks)[Symbol.asyncIterator]();
    assert.deepEqual(await iterator.return?.(), { done: true, value: undefined });
    assert.equal(canAcquire(limiter, "k"), true);
  });

  it("keeps status and headers of a streamed response", async () => {
    const handler: Handler = () => ({
      status: 206,
      headers: { "x-a": "1" },
      body: (async function* (): AsyncGenerator<string> {})(),
    });
    const response = await withRateLimit(handler, singleFlight(), byKey)(makeRequest());
    assert.equal(response.status, 206);
    assert.deepEqual(response.headers, { "x-a": "1" });
  });
});

describe("withRateLimit() with a body in parts", () => {
  it("releases the permit at once, as for any complete body", async () => {
    const limiter = new RateLimiter({ ratePerSecond: 0, maxConcurrent: 1, now: () => 0 });
    const handler = withRateLimit(
      () => ({ status: 200, body: [new Uint8Array(1)] }),
      limiter,
      () => "k",
    );
    const response = await callHandler(handler, makeRequest());
    assert.ok(Array.isArray(response.body));
    assert.equal(limiter.acquire("k").ok, true);
  });
});

describe("withRateLimit() and withCors() with an answer given at once", () => {
  const limiter = () =>
    new RateLimiter({ ratePerSecond: 100, burst: 10, maxConcurrent: 8, now: () => 0 });
  const fixed: Handler = () => ({
    status: 200,
    headers: { "content-type": "text/plain" },
    body: "ok",
  });

  it("answer synchronously, a memory limiter and a handler that answers at once costing no microtask turn", () => {
    const limited = withRateLimit(fixed, limiter(), byKey);
    const answer = limited(makeRequest());
    assert.ok(!(answer instanceof Promise), "withRateLimit answers at once");
    assert.equal((answer as HttpResponse).headers?.["ratelimit-limit"], "10");
    const crossed = withCors(limited, { origins: ["https://app.example"] });
    for (
      const headers of [{}, { origin: "https://app.example" }, { origin: "https://other.example" }]
    ) {
      const result = crossed(makeRequest({ headers }));
      assert.ok(
        !(result instanceof Promise),
        `withCors answers at once (${JSON.stringify(headers)})`,
      );
      assert.equal((result as HttpResponse).status, 200);
    }
    const allowed = crossed(
      makeRequest({ headers: { origin: "https://app.example" } }),
    ) as HttpResponse;
    assert.equal(allowed.headers?.["access-control-allow-origin"], "https://app.example");
    assert.equal(allowed.headers?.["ratelimit-limit"], "10");
  });

  it("answer a client error thrown at once with the quota, at once, and release its permit", () => {
    const limits = new RateLimiter({
      ratePerSecond: 100,
      burst: 10,
      maxConcurrent: 1,
      now: () => 0,
    });
    const refusing: Handler = () => {
      throw new HttpError("ERR_HTTP_NOT_FOUND", "no such thing");
    };
    const answer = withRateLimit(refusing, limits, byKey)(makeRequest());
    assert.ok(!(answer instanceof Promise));
    assert.equal((answer as HttpResponse).status, 404);
    assert.equal((answer as HttpResponse).headers?.["ratelimit-limit"], "10");
    assert.ok(canAcquire(limits, "k"), "the permit is released");
  });

  it("still wait for a limiter that answers later, and for a handler that does", async () => {
    const later = { acquire: (key: string) => Promise.resolve(limiter().acquire(key)) };
    const slow: Handler = () => Promise.resolve({ status: 201, body: "made" });
    const answer = withCors(withRateLimit(slow, later, byKey), { origins: [] })(makeRequest());
    assert.ok(answer instanceof Promise);
    assert.equal((await answer).status, 201);
    const down = { acquire: () => Promise.reject(new Error("store down")) };
    await assert.rejects(
      Promise.resolve().then(() => withRateLimit(fixed, down, byKey)(makeRequest())),
      (error: unknown) => statusOf(error) === 503,
    );
    // A limiter that answers nothing, or a thenable whose then throws: its failure, a 503 too.
    const broken = [
      { acquire: () => null as unknown as ReturnType<RateLimiter["acquire"]> },
      {
        acquire: () =>
          ({
            then: () => {
              throw new Error("a broken thenable");
            },
          }) as unknown as Promise<ReturnType<RateLimiter["acquire"]>>,
      },
    ];
    for (const limiter of broken) {
      await assert.rejects(
        Promise.resolve().then(() => withRateLimit(fixed, limiter, byKey)(makeRequest())),
        (error: unknown) => statusOf(error) === 503,
      );
    }
  });
});
