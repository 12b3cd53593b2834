import { Agent as HttpAgent, type IncomingMessage, request as httpRequest } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { type AddressPolicy, checkTarget, guardedLookup } from "./address_policy.ts";
import { mergeHeaders } from "../http/_internal.ts";
import { RelayError } from "./errors.ts";

/** One delivery request: POST `body` to `url` with `headers`. */
export interface DeliveryRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly timeoutMs: number;
}

/** What a delivery came to: the receiver's answer, or why there was none. */
export type DeliveryResult =
  | { readonly kind: "response"; readonly status: number; readonly retryAfter: string | undefined }
  | { readonly kind: "timeout"; readonly message: string }
  | { readonly kind: "blocked"; readonly message: string }
  | { readonly kind: "error"; readonly message: string };

/** Sends one delivery; never throws, every failure is a result. */
export type Deliver = (request: DeliveryRequest) => Promise<DeliveryResult>;

/** Options of {@linkcode createHttpDelivery}. */
export interface HttpDeliveryOptions {
  /** Which addresses may be dialled: the SSRF guard. */
  readonly policy: AddressPolicy;
  /**
   * Sockets kept per receiver host.
   * @default {64}
   */
  readonly maxSocketsPerHost?: number;
  /**
   * Bytes of a receiver's answer read at most; the rest is dropped.
   * @default {65536}
   */
  readonly maxResponseBytes?: number;
}

/**
 * Delivers over `node:http` and `node:https` with keep-alive, through the
 * address policy at connect time (a custom `lookup`, so a name that resolves
 * to a refused address, or rebinds to one, is never dialled; IP literals are
 * checked before). Redirects are not followed: a 3xx is the receiver's
 * answer. The whole exchange has one deadline.
 * @param options the policy and limits
 * @returns the delivery function and a way to close its sockets
 */
export function createHttpDelivery(
  options: HttpDeliveryOptions,
): { deliver: Deliver; close: () => void } {
  const lookup = guardedLookup(options.policy);
  const maxSockets = options.maxSocketsPerHost ?? 64;
  const maxResponse = options.maxResponseBytes ?? 65_536;
  const http = new HttpAgent({ keepAlive: true, maxSockets });
  const https = new HttpsAgent({ keepAlive: true, maxSockets });

  // Each endpoint's URL parsed and checked against the policy once: an endpoint's deliveries
  // all go to the same URL, and the policy does not change (names are checked as they resolve).
  const targets = new Map<string, URL | DeliveryResult>();
  const targetOf = (text: string): URL | DeliveryResult => {
    let target = targets.get(text);
    if (target === undefined) {
      try {
        const url = new URL(text);
        checkTarget(options.policy, url);
        target = url;
      } catch (error) {
        target = failure(error);
      }
      if (targets.size >= MAX_TARGETS) targets.clear();
      targets.set(text, target);
    }
    return target;
  };

  function deliver(request: DeliveryRequest): Promise<DeliveryResult> {
    const url = targetOf(request.url);
    if (!(url instanceof URL)) return Promise.resolve(url);
    const secure = url.protocol === "https:";
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: DeliveryResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      const req = (secure ? httpsRequest : httpRequest)(url, {
        method: "POST",
        agent: secure ? https : http,
        lookup,
        headers: mergeHeaders(request.headers, {
          "content-length": String(Buffer.byteLength(request.body)),
        }),
      }, (res: IncomingMessage) => {
        let read = 0;
        res.on("data", (chunk: Buffer) => {
          read += chunk.length;
          // A receiver that talks too much is cut off; its status stands.
          if (read > maxResponse) res.destroy();
        });
        const done = (): void => {
          const retryAfter = res.headers["retry-after"];
          finish({
            kind: "response",
            status: res.statusCode ?? 0,
            retryAfter: typeof retryAfter === "string" ? retryAfter : undefined,
          });
        };
        res.on("end", done);
        res.on("close", done);
        res.on("error", done);
      });
      const timer = setTimeout(() => {
        finish({ kind: "timeout", message: `No answer within ${request.timeoutMs} ms` });
        req.destroy();
      }, request.timeoutMs);
      req.on("error", (error) => finish(failure(error)));
      req.end(request.body);
    });
  }

  return {
    deliver,
    close() {
      http.destroy();
      https.destroy();
    },
  };
}

/** Endpoint URLs kept parsed and checked; past it, the memory starts again. */
const MAX_TARGETS = 10_000;

function failure(error: unknown): DeliveryResult {
  if (error instanceof RelayError && error.code === "ERR_RELAY_BLOCKED_ADDRESS") {
    return { kind: "blocked", message: error.message };
  }
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return {
    kind: "error",
    message: typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message,
  };
}
