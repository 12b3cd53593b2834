import { errorResponse, statusOf } from "./error_response.ts";
import { HttpError } from "./errors.ts";
import { mergeHeaders } from "./merge_headers.ts";
import type { RateDecision, RateQuota } from "./rate_limiter.ts";

/** A per-key limiter: `RateLimiter` in this process, or `RedisRateLimiter` shared by every replica. */
export interface KeyLimiter {
  acquire(key: string): RateDecision | Promise<RateDecision>;
}
import type { BodyChunks, Handler, HttpRequest, HttpResponse } from "./types.ts";

/**
 * Puts a handler behind a per-key limiter (`RateLimiter` or
 * `RedisRateLimiter`). `identify` names the caller (and may throw, e.g. for a
 * missing key, before any limit is consulted). A refused request gets 429
 * with `Retry-After`; a limiter that cannot answer (Redis down) 503 with
 * `Retry-After`. A streamed response holds its permit until the stream ends
 * or is abandoned. Every answer of a limiter with a rate, errors included,
 * tells the caller where it stands, in the headers of the IETF draft
 * (draft-ietf-httpapi-ratelimit-headers): `RateLimit-Policy: <limit>;w=<s>`,
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`, so that a
 * client can pace itself instead of meeting a 429.
 * @param handler the handler to wrap
 * @param limiter the limiter
 * @param identify gives the key a request counts against
 * @returns the wrapped handler
 */
export function withRateLimit(
  handler: Handler,
  limiter: KeyLimiter,
  identify: (request: HttpRequest) => string,
): Handler {
  // An answer given at once stays synchronous through here: a limiter in memory and a handler
  // that answers at once cost no turn of the microtask queue.
  return function rateLimited(request: HttpRequest): HttpResponse | Promise<HttpResponse> {
    const key = identify(request);
    let acquired: RateDecision | Promise<RateDecision>;
    /** A decision to come; every failure of the limiter's, at once or later, is a 503. */
    let later: Promise<RateDecision> | undefined;
    try {
      acquired = limiter.acquire(key);
      if (typeof (acquired as { then?: unknown }).then === "function") {
        later = Promise.resolve(acquired);
      }
    } catch (cause) {
      throw unavailable(cause);
    }
    if (later !== undefined) {
      return later.then(
        (decision) => decided(handler, request, decision),
        (cause: unknown) => {
          throw unavailable(cause);
        },
      );
    }
    return decided(handler, request, acquired as RateDecision);
  };
}

function unavailable(cause: unknown): HttpError {
  return new HttpError(
    "ERR_HTTP_UNAVAILABLE",
    "Cannot check the rate limit: its store does not answer; retry shortly",
    {
      headers: { "retry-after": "1" },
      cause,
    },
  );
}

/** A decision that lets the request through, with its permit. */
type Granted = Extract<RateDecision, { readonly ok: true }>;

/** The answer once the limiter has decided: a 429, or the handler's answer with the quota. */
function decided(
  handler: Handler,
  request: HttpRequest,
  decision: RateDecision,
): HttpResponse | Promise<HttpResponse> {
  if (!decision.ok) {
    const why = decision.reason === "rate"
      ? "the request rate is above the limit"
      : "another request from the same caller is still running";
    throw new HttpError(
      "ERR_HTTP_RATE_LIMITED",
      `Cannot accept the request now: ${why}; retry after ${decision.retryAfterSeconds} s`,
      {
        headers: addQuota({ "retry-after": String(decision.retryAfterSeconds) }, decision.quota),
      },
    );
  }
  let answer: HttpResponse | Promise<HttpResponse>;
  try {
    answer = handler(request);
  } catch (error) {
    return failed(decision, error);
  }
  return answer instanceof Promise
    ? answer.then(
      (value) => answered(decision, value),
      (error: unknown) => failed(decision, error),
    )
    : answered(decision, answer);
}

/** A handler's error: the permit released, and an error the client caused answered with the quota. */
function failed(decision: Granted, error: unknown): HttpResponse {
  decision.release();
  // An internal one goes on to be logged.
  if (decision.quota === undefined || statusOf(error) === 500) throw error;
  return answered(decision, errorResponse(error));
}

/** The answer with the quota's headers, its permit released once its body is sent. */
function answered(decision: Granted, answer: HttpResponse): HttpResponse {
  const quota = decision.quota;
  const response = quota === undefined
    ? answer
    : { ...answer, headers: addQuota(mergeHeaders(answer.headers), quota) };
  const body = response.body;
  if (
    body === undefined || typeof body === "string" || body instanceof Uint8Array ||
    Array.isArray(body)
  ) {
    decision.release();
    return response;
  }
  // A permit that expires is renewed while the stream runs, and no longer once it ends.
  const renew = decision.renew;
  // A renewal that fails leaves the permit to expire; it must not become an unhandled rejection.
  const timer = renew === undefined ? undefined : setInterval(
    () => void Promise.resolve().then(renew).catch(() => {}),
    decision.renewEveryMs ?? 10_000,
  );
  timer?.unref();
  return {
    ...response,
    body: releasing(body as BodyChunks, () => {
      if (timer !== undefined) clearInterval(timer);
      decision.release();
    }),
  };
}

function addQuota(
  headers: Record<string, string>,
  quota: RateQuota | undefined,
): Record<string, string> {
  if (quota === undefined) return headers;
  headers["ratelimit-policy"] = `${quota.limit};w=${quota.windowSeconds}`;
  headers["ratelimit-limit"] = String(quota.limit);
  headers["ratelimit-remaining"] = String(quota.remaining);
  headers["ratelimit-reset"] = String(quota.resetSeconds);
  return headers;
}

function releasing(body: BodyChunks, release: () => void): BodyChunks {
  return {
    [Symbol.asyncIterator](): AsyncIterator<string | Uint8Array> {
      const inner = body[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const next = await inner.next();
            if (next.done === true) release();
            return next;
          } catch (error) {
            release();
            throw error;
          }
        },
        async return(value?: unknown) {
          release();
          const result = await inner.return?.(value);
          return result ?? { done: true, value: undefined };
        },
      };
    },
  };
}
