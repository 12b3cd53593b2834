import { HttpError } from "./errors.ts";
import type { RateDecision } from "./rate_limiter.ts";

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
 * or is abandoned.
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
  return async function rateLimited(request: HttpRequest): Promise<HttpResponse> {
    const key = identify(request);
    let decision: RateDecision;
    try {
      decision = await limiter.acquire(key);
    } catch (cause) {
      throw new HttpError("ERR_HTTP_UNAVAILABLE", "Cannot check the rate limit: its store does not answer; retry shortly", {
        headers: { "retry-after": "1" },
        cause,
      });
    }
    if (!decision.ok) {
      const why = decision.reason === "rate"
        ? "the request rate is above the limit"
        : "another request from the same caller is still running";
      throw new HttpError(
        "ERR_HTTP_RATE_LIMITED",
        `Cannot accept the request now: ${why}; retry after ${decision.retryAfterSeconds} s`,
        { headers: { "retry-after": String(decision.retryAfterSeconds) } },
      );
    }
    let response: HttpResponse;
    try {
      response = await handler(request);
    } catch (error) {
      decision.release();
      throw error;
    }
    const body = response.body;
    if (body === undefined || typeof body === "string" || body instanceof Uint8Array || Array.isArray(body)) {
      decision.release();
      return response;
    }
    // A permit that expires is renewed while the stream runs, and no longer once it ends.
    const renew = decision.renew;
    const timer = renew === undefined ? undefined : setInterval(() => void renew(), decision.renewEveryMs ?? 10_000);
    timer?.unref();
    return {
      ...response,
      body: releasing(body as BodyChunks, () => {
        if (timer !== undefined) clearInterval(timer);
        decision.release();
      }),
    };
  };
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
