import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "./errors.ts";
import { errorResponse, statusOf } from "./error_response.ts";
import { createBodyReader } from "./read_body.ts";
import type { Handler, HttpRequest, HttpResponse } from "./types.ts";

/** Options of {@linkcode createNodeListener}. */
export interface NodeListenerOptions {
  /** Called with every error that becomes a 500, and with errors of a stream already under way. */
  onError?: (error: unknown) => void;
  /**
   * Origin to report in `request.origin` instead of the one derived from the
   * `Host` header, e.g. `https://api.example.org` behind a proxy.
   */
  publicOrigin?: string;
}

const HOST_PATTERN = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * Adapts a {@linkcode Handler} to `node:http`: builds the request record,
 * turns thrown errors into JSON responses, and streams chunked bodies with
 * backpressure, stopping when the client goes away.
 * @param handler the handler to serve
 * @param options error hook and public origin
 * @returns a listener for `http.createServer`
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * createServer(createNodeListener(handler)).listen(8000);
 * ```
 */
export function createNodeListener(
  handler: Handler,
  options: NodeListenerOptions = {},
): (req: IncomingMessage, res: ServerResponse) => void {
  return function listener(req: IncomingMessage, res: ServerResponse): void {
    void serve(handler, options, req, res);
  };
}

async function serve(
  handler: Handler,
  options: NodeListenerOptions,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  let response: HttpResponse;
  let method = req.method ?? "GET";
  try {
    const request = toRequest(req, controller.signal, options.publicOrigin);
    method = request.method;
    response = await handler(request);
  } catch (error) {
    if (statusOf(error) === 500) options.onError?.(error);
    response = errorResponse(error);
  }
  await send(res, response, method, controller.signal, options);
}

function toRequest(req: IncomingMessage, signal: AbortSignal, publicOrigin?: string): HttpRequest {
  // Node gives lower-case names and strings, arrays only for a few repeated
  // headers (set-cookie); copy only then.
  let headers = req.headers as Record<string, string>;
  for (const name in req.headers) {
    if (typeof req.headers[name] !== "string") {
      headers = {};
      for (const [key, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers[key] = Array.isArray(value) ? value.join(", ") : value;
      }
      break;
    }
  }
  const { path, query } = splitTarget(req.url ?? "/");
  return {
    method: (req.method ?? "GET").toUpperCase(),
    path,
    query,
    headers,
    remoteAddress: req.socket.remoteAddress ?? "",
    origin: publicOrigin ?? originOf(req, headers["host"]),
    signal,
    body: createBodyReader(() => req, headers["content-length"]),
  };
}

function splitTarget(target: string): { path: string; query: string } {
  let pathAndQuery = target;
  if (!target.startsWith("/")) {
    const parsed = URL.parse(target);
    if (parsed === null) {
      throw new HttpError("ERR_HTTP_MALFORMED_URL", `Cannot parse the request target "${target}"`);
    }
    pathAndQuery = parsed.pathname + parsed.search;
  }
  const hash = pathAndQuery.indexOf("#");
  if (hash !== -1) pathAndQuery = pathAndQuery.slice(0, hash);
  const question = pathAndQuery.indexOf("?");
  return question === -1
    ? { path: pathAndQuery, query: "" }
    : { path: pathAndQuery.slice(0, question), query: pathAndQuery.slice(question + 1) };
}

function originOf(req: IncomingMessage, host: string | undefined): string {
  const scheme = "encrypted" in req.socket && req.socket.encrypted === true ? "https" : "http";
  if (host !== undefined && HOST_PATTERN.test(host)) return `${scheme}://${host}`;
  const address = req.socket.localAddress ?? "127.0.0.1";
  const shown = address.includes(":") ? `[${address}]` : address;
  return `${scheme}://${shown}:${req.socket.localPort ?? 80}`;
}

async function send(
  res: ServerResponse,
  response: HttpResponse,
  method: string,
  signal: AbortSignal,
  options: NodeListenerOptions,
): Promise<void> {
  const body = response.body;
  const bodiless = method === "HEAD" || response.status === 204 || response.status === 304;
  if (Array.isArray(body)) {
    const parts = body as readonly Uint8Array[];
    let length = 0;
    for (const part of parts) length += part.byteLength;
    res.writeHead(response.status, { ...response.headers, "content-length": String(length) });
    if (bodiless) {
      res.end();
      return;
    }
    // Corked, the parts leave in one write without being joined first.
    res.cork();
    for (let i = 0; i + 1 < parts.length; i++) res.write(parts[i]!);
    res.end(parts.length > 0 ? parts[parts.length - 1] : undefined);
    res.uncork();
    return;
  }
  if (body === undefined || typeof body === "string" || body instanceof Uint8Array) {
    const length = body === undefined ? 0 : typeof body === "string" ? Buffer.byteLength(body) : body.byteLength;
    const headers = response.status === 204 || response.status === 304 || response.headers?.["content-length"] !== undefined
      ? response.headers
      : { ...response.headers, "content-length": String(length) };
    res.writeHead(response.status, headers);
    res.end(bodiless ? undefined : body);
    return;
  }
  const iterator = (body as AsyncIterable<string | Uint8Array>)[Symbol.asyncIterator]();
  if (bodiless) {
    await iterator.return?.();
    res.writeHead(response.status, response.headers);
    res.end();
    return;
  }
  await stream(res, response, iterator, signal, options);
}

async function stream(
  res: ServerResponse,
  response: HttpResponse,
  iterator: AsyncIterator<string | Uint8Array>,
  signal: AbortSignal,
  options: NodeListenerOptions,
): Promise<void> {
  let done = false;
  try {
    let next = await iterator.next();
    res.writeHead(response.status, response.headers);
    while (next.done !== true) {
      if (!res.write(next.value)) await drained(res, signal);
      if (signal.aborted) break;
      next = await iterator.next();
    }
    done = next.done === true;
    if (done) res.end();
  } catch (error) {
    done = true;
    if (!res.headersSent) {
      if (statusOf(error) === 500) options.onError?.(error);
      const failure = errorResponse(error);
      res.writeHead(failure.status, failure.headers);
      res.end(failure.body as string);
      return;
    }
    options.onError?.(error);
    res.destroy(error instanceof Error ? error : new Error(String(error)));
  } finally {
    if (!done) {
      await iterator.return?.();
      res.destroy();
    }
  }
}

function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const finish = (): void => {
      res.off("drain", finish);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    res.on("drain", finish);
    signal.addEventListener("abort", finish);
  });
}

