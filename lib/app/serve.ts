import {
  createNodeListener,
  type Handler,
  type HttpRequest,
  type HttpResponse,
  type ResponseEntry,
} from "../http/mod.ts";
import { waitAtMost, withCompression } from "../http/_internal.ts";
import type { Logger } from "../log/mod.ts";
import type { ListeningAddress } from "./app_types.ts";
import { createNodeServer, type NodeServer, readTlsFiles } from "./node_server.ts";
import type { Config } from "./read_config.ts";

/** What {@linkcode serveOverHttp} serves, and how it names and logs requests. */
export interface ServeOptions {
  readonly config: Config;
  /** What answers, as the app's state says. */
  readonly handler: Handler;
  readonly log: Logger;
  /** Request ids (a random prefix and a counter). */
  readonly requestId: () => string;
  /** The access log's hook, when it is on. */
  readonly onResponse?: (entry: ResponseEntry) => void;
  /** Monotonic clock, for the access log's durations. */
  readonly now: () => number;
}

/** An app's HTTP server: listening once, stopped with a bound. */
export interface Served {
  listen(port: number, host: string): Promise<ListeningAddress>;
  /** Stops taking connections and waits up to `drainMs` for those in flight, then closes the rest. */
  stop(drainMs: number): Promise<void>;
}

/**
 * Serves a handler over HTTP/1.1 (HTTPS and HTTP/2 with `TLS_CERT_FILE`),
 * compressed as `COMPRESS_ABOVE_BYTES` says, behind the trusted proxies of
 * `TRUST_PROXY`, with request ids and the access log.
 * @param options the configuration, handler, log and hooks
 * @returns the server, not yet listening
 */
export function serveOverHttp(options: ServeOptions): Served {
  const { config, log } = options;
  let server: NodeServer | undefined;
  return {
    async listen(port, host) {
      if (server !== undefined) throw new Error("Cannot listen: the app listens already");
      const tls = readTlsFiles(config.server.tlsCertFile, config.server.tlsKeyFile);
      const created = createNodeServer(
        createNodeListener(
          withCompression(options.handler, { minBytes: config.server.compressAboveBytes }),
          {
            onError: (error) => log.error("Unexpected error", error),
            requestId: options.requestId,
            ...(options.onResponse === undefined
              ? {}
              : { onResponse: options.onResponse, now: options.now }),
            ...(config.server.publicUrl === undefined
              ? {}
              : { publicOrigin: config.server.publicUrl }),
            ...(config.server.trustProxy === undefined ? {} : {
              trustedProxies: config.server.trustProxy,
              forwardedHeaders: config.server.trustProxyHeaders,
            }),
          },
        ),
        tls,
      );
      const bound = await created.listen(port, host);
      server = created;
      const shown = host === "0.0.0.0" || host === "::"
        ? "localhost"
        : host.includes(":")
        ? `[${host}]`
        : host;
      const url = `${created.scheme}://${shown}:${bound}`;
      return { url, port: bound, publicUrl: config.server.publicUrl ?? url };
    },
    async stop(drainMs) {
      if (server === undefined) return;
      const listening = server;
      const stopped = listening.close();
      listening.closeIdle();
      await waitAtMost(stopped, drainMs);
      listening.closeAll();
    },
  };
}

/** A handler that counts the requests in flight, and waits for them to end. */
export interface CountedHandler {
  readonly handler: Handler;
  /** Resolves once no request is in flight, or after `ms`. */
  settled(ms: number): Promise<void>;
}

/**
 * Counts the requests a handler has in flight, for a close to wait for.
 * @param inner the handler
 * @returns the counting handler
 */
export function countRequests(
  inner: (request: HttpRequest) => HttpResponse | Promise<HttpResponse>,
): CountedHandler {
  let inFlight = 0;
  let settled: (() => void) | undefined;
  const settle = (): void => {
    if (--inFlight === 0) settled?.();
  };
  return {
    handler(request) {
      inFlight++;
      let answer: HttpResponse | Promise<HttpResponse>;
      try {
        answer = inner(request);
      } catch (error) {
        settle();
        throw error;
      }
      if (answer instanceof Promise) answer.then(settle, settle);
      else settle();
      return answer;
    },
    settled: async (ms) => {
      if (inFlight > 0) await waitAtMost(new Promise<void>((resolve) => (settled = resolve)), ms);
    },
  };
}
