import { ANSWERED_BY, type AnsweredBy } from "./answered_by.ts";
import { HttpError } from "./errors.ts";
import { mergeHeaders } from "./merge_headers.ts";
import { ROUTED } from "./router.ts";
import { errorResponse, statusOf } from "./error_response.ts";
import { type ForwardedHeaders, readForwarded, type TrustedProxies } from "./trusted_proxies.ts";
import type { BodyReader, Handler, HttpRequest, HttpResponse } from "./types.ts";

/** Options of {@linkcode createNodeListener}. */
export interface NodeListenerOptions {
  /** Called with every error that becomes a 500, and with errors of a stream already under way. */
  onError?: (error: unknown) => void;
  /**
   * Origin to report in `request.origin` instead of the one derived from the
   * `Host` header, e.g. `https://api.example.org` behind a proxy.
   */
  publicOrigin?: string;
  /**
   * Proxies whose `Forwarded` / `X-Forwarded-*` headers count (`TRUST_PROXY`):
   * from them, `request.origin` takes the scheme and host the client used
   * and `request.remoteAddress` the client's address. From anyone else the
   * headers are ignored.
   */
  trustedProxies?: TrustedProxies;
  /**
   * Which forwarding headers the trusted proxies write.
   * @default {"x-forwarded"}
   */
  forwardedHeaders?: ForwardedHeaders;
  /**
   * Gives an id to each request (an access log's and its errors' common
   * key): with it, every response carries `X-Request-Id`, the one a trusted
   * proxy sent (`trustedProxies`) when it is a plain token of at most 128
   * characters, else a new one. Without it, no id is made or sent.
   */
  requestId?: () => string;
  /**
   * Told of every response once it is sent whole, or cut off: what an access
   * log writes. Called after the last byte, so a streamed body counts whole.
   */
  onResponse?: (entry: ResponseEntry) => void;
  /**
   * Monotonic clock of {@linkcode ResponseEntry.durationMs}, in milliseconds.
   * @default {performance.now}
   */
  now?: () => number;
}

/** A response as an access log sees it; never its body nor the request's credentials. */
export interface ResponseEntry {
  /** The request record; undefined when its target could not be read (the answer was a 400). */
  readonly request: HttpRequest | undefined;
  readonly method: string;
  readonly status: number;
  /** Body bytes sent (for a HEAD, none). */
  readonly bytes: number;
  /** From the request's arrival to its last byte sent. */
  readonly durationMs: number;
  /** The request's id, when ids are given (`requestId`). */
  readonly requestId: string | undefined;
  /** Whether the client went away before the body was sent whole. */
  readonly aborted: boolean;
}

function monotonic(): number {
  return performance.now();
}

/** An `X-Request-Id` a trusted proxy may pass on: a token of visible characters, short. */
const REQUEST_ID = /^[A-Za-z0-9._:@+/=-]{1,128}$/;

/**
 * What {@linkcode createNodeListener} uses of a request: a `node:http`
 * `NodeListenerRequest` is one, and so is a `node:http2` `Http2ServerRequest`
 * (whose compatibility API `allowHTTP1` also gives HTTP/1.1 requests).
 * Declared here rather than imported from `node:http`, so that the
 * package's types need neither `@types/node` nor Node's own classes.
 */
export interface NodeListenerRequest {
  readonly method?: string | undefined;
  /** The request target, e.g. `/v1/odata/v4/Locations?$top=2`. */
  readonly url?: string | undefined;
  /** Lower-case names; an array only for a repeated header such as `set-cookie`; HTTP/2's pseudo-headers (`:authority`) too. */
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly socket: {
    readonly remoteAddress?: string | undefined;
    readonly localAddress?: string | undefined;
    readonly localPort?: number | undefined;
    /** True on a TLS socket. */
    readonly encrypted?: boolean;
  };
  /** Whether the whole body has arrived. */
  readonly complete: boolean;
  readonly readableEnded: boolean;
  readonly destroyed: boolean;
  /** The body buffered so far (text only after a `setEncoding`), or null. */
  read(): Uint8Array | string | null;
  resume(): unknown;
  on(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  on(event: "end" | "error" | "close", listener: () => void): unknown;
  off(event: "data", listener: (chunk: Uint8Array) => void): unknown;
  off(event: "end" | "error" | "close", listener: () => void): unknown;
}

/**
 * What {@linkcode createNodeListener} uses of a response, the same on
 * `node:http` (`ServerResponse`) and `node:http2` (`Http2ServerResponse`).
 */
export interface NodeListenerResponse {
  writeHead(status: number, headers?: Readonly<Record<string, string>>): unknown;
  write(chunk: string | Uint8Array): boolean;
  end(chunk?: string | Uint8Array): unknown;
  cork(): void;
  uncork(): void;
  destroy(error?: Error): unknown;
  readonly headersSent: boolean;
  readonly writableFinished: boolean;
  /** On `node:http`; `node:http2`'s compatibility response has no such field: its `stream` has. */
  readonly destroyed?: boolean;
  /** `node:http2`'s stream under the compatibility response. */
  readonly stream?: { readonly destroyed: boolean };
  on(event: "close" | "drain", listener: () => void): unknown;
  off(event: "close" | "drain", listener: () => void): unknown;
}

/** A request listener of `node:http` and `node:http2`, as {@linkcode createNodeListener} makes it. */
export type NodeListener = (req: NodeListenerRequest, res: NodeListenerResponse) => void;

const HOST_PATTERN = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * Adapts a {@linkcode Handler} to `node:http` and `node:http2` (its
 * compatibility API, as `createSecureServer` with `allowHTTP1` gives it): builds the request record,
 * turns thrown errors into JSON responses, and streams chunked bodies with
 * backpressure, stopping when the client goes away.
 * What Node's parser refuses before a request exists (a request line and
 * headers too large, a malformed request, a timeout) never reaches it: give
 * the server {@linkcode createClientErrorListener} for those, so that they
 * get the same JSON error body.
 * @param handler the handler to serve
 * @param options error hook and public origin
 * @returns a listener for `http.createServer`
 * @example
 * ```ts
 * import { createServer } from "node:http";
 * const server = createServer(createNodeListener(handler));
 * server.on("clientError", createClientErrorListener());
 * server.listen(8000);
 * ```
 */
export function createNodeListener(
  handler: Handler,
  options: NodeListenerOptions = {},
): NodeListener {
  return function listener(req: NodeListenerRequest, res: NodeListenerResponse): void {
    void serve(handler, options, req, res);
  };
}

async function serve(
  handler: Handler,
  options: NodeListenerOptions,
  req: NodeListenerRequest,
  res: NodeListenerResponse,
): Promise<void> {
  const clock = options.now ?? monotonic;
  const started = options.onResponse === undefined ? 0 : clock();
  let response: HttpResponse;
  let method = req.method ?? "GET";
  let request: NodeRequest | undefined;
  let requestId: string | undefined;
  try {
    if (options.requestId !== undefined) requestId = requestIdOf(req, options);
    request = new NodeRequest(req, res, options);
    method = request.method;
    response = await handler(request);
  } catch (error) {
    if (statusOf(error) === 500) options.onError?.(error);
    response = errorResponse(error);
  }
  // The id goes into the one copy of the headers that sending makes anyway, not a copy of its own.
  const sent = await send(res, response, method, request, options, requestId);
  if (options.onResponse !== undefined) {
    options.onResponse({
      request,
      method,
      status: sent.status ?? response.status,
      bytes: sent.bytes,
      durationMs: clock() - started,
      requestId,
      aborted: !sent.whole,
    });
  }
}

/** The id of a request: a trusted proxy's `X-Request-Id`, when it is one, else a new one. */
function requestIdOf(req: NodeListenerRequest, options: NodeListenerOptions): string {
  const given = req.headers["x-request-id"];
  if (
    typeof given === "string" &&
    options.trustedProxies?.trusts(req.socket.remoteAddress ?? "") === true &&
    REQUEST_ID.test(given)
  ) return given;
  return options.requestId!();
}

/**
 * The request record of `node:http`. A class rather than an object literal:
 * V8 builds a literal with a getter on a slow path, and every handler reading
 * its fields then pays for it.
 */
class NodeRequest implements HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly remoteAddress: string;
  readonly origin: string;
  readonly body: BodyReader;
  /** Which service and route answered, noted while answering (`noteAnsweredBy`). */
  [ANSWERED_BY]: AnsweredBy | undefined;
  /** The route a router dispatched it to (see `ROUTED`), a slot of the class so noting it keeps the shape. */
  [ROUTED]: unknown;
  readonly #res: NodeListenerResponse;
  #signal: AbortSignal | undefined;

  constructor(req: NodeListenerRequest, res: NodeListenerResponse, options: NodeListenerOptions) {
    const headers = headersOf(req);
    const target = req.url ?? "/";
    const [path, query] = splitTarget(target);
    this.method = (req.method ?? "GET").toUpperCase();
    this.path = path;
    this.query = query;
    this.headers = headers;
    const peer = req.socket.remoteAddress ?? "";
    const forwarded = options.trustedProxies === undefined
      ? undefined
      : readForwarded(peer, headers, options.trustedProxies, options.forwardedHeaders);
    this.remoteAddress = forwarded?.client ?? peer;
    this.origin = options.publicOrigin ??
      originOf(req, forwarded?.host ?? headers["host"], forwarded?.proto);
    this.body = new NodeBodyReader(req, headers["content-length"]);
    this[ANSWERED_BY] = undefined;
    this[ROUTED] = undefined;
    this.#res = res;
    this.#signal = undefined;
  }

  /**
   * Made on first use: most handlers never look, and an AbortController with
   * a close listener per request costs.
   */
  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      const res = this.#res;
      const controller = new AbortController();
      // Gone before anyone looked (a client that reset its stream): aborted from the start.
      if ((res.destroyed === true || res.stream?.destroyed === true) && !res.writableFinished) {
        controller.abort();
      }
      res.on("close", () => {
        if (!res.writableFinished) controller.abort();
      });
      this.#signal = controller.signal;
    }
    return this.#signal;
  }
}

/** Node gives lower-case names and strings, arrays only for a few repeated headers (set-cookie); copy only then. */
function headersOf(req: NodeListenerRequest): Record<string, string> {
  const raw = req.headers;
  for (const name in raw) {
    // HTTP/2 pseudo-headers (`:path`, `:authority`, ...) are not headers; `:authority` stands for `Host`.
    if (typeof raw[name] !== "string" || name.startsWith(":")) {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries(raw)) {
        if (value === undefined || key.startsWith(":")) continue;
        headers[key] = Array.isArray(value) ? value.join(", ") : value;
      }
      const authority = raw[":authority"];
      if (headers["host"] === undefined && typeof authority === "string") {
        headers["host"] = authority;
      }
      return headers;
    }
  }
  return raw as Record<string, string>;
}

/** A body reader on the request's events, cheaper than async iteration. */
class NodeBodyReader implements BodyReader {
  readonly #req: NodeListenerRequest;
  readonly #declaredLength: string | undefined;
  #consumed = false;

  constructor(req: NodeListenerRequest, declaredLength: string | undefined) {
    this.#req = req;
    this.#declaredLength = declaredLength;
  }

  bytes(maxBytes: number): Promise<Uint8Array> {
    if (this.#consumed) {
      return Promise.reject(new TypeError("Cannot read the request body: it was already read"));
    }
    this.#consumed = true;
    const req = this.#req;
    if (this.#declaredLength !== undefined && Number(this.#declaredLength) > maxBytes) {
      return Promise.reject(tooLarge(maxBytes));
    }
    if (req.readableEnded) return Promise.resolve(new Uint8Array(0));
    if (req.destroyed) return Promise.reject(aborted());
    if (req.complete) return settle(() => this.#buffered(maxBytes));
    // A small body usually arrives in the same read as the headers, but Node
    // parses it only after the request event and its microtasks: by the check
    // phase of this turn of the event loop it is buffered whole and can be
    // taken without listeners.
    return new Promise((resolve, reject) =>
      setImmediate(afterRead, this, maxBytes, resolve, reject)
    );
  }

  /** Takes the buffered body if it has all arrived, or listens for the rest. */
  static afterRead(
    reader: NodeBodyReader,
    maxBytes: number,
    resolve: (body: Uint8Array | Promise<Uint8Array>) => void,
    reject: (error: unknown) => void,
  ): void {
    try {
      resolve(reader.#req.complete ? reader.#buffered(maxBytes) : reader.#listen(maxBytes));
    } catch (error) {
      reject(error);
    }
  }

  #buffered(maxBytes: number): Uint8Array {
    if (this.#req.destroyed) throw aborted();
    const read = this.#req.read() ?? new Uint8Array(0);
    const whole = typeof read === "string" ? new TextEncoder().encode(read) : read;
    if (whole.length > maxBytes) throw tooLarge(maxBytes);
    return new Uint8Array(whole.buffer, whole.byteOffset, whole.length);
  }

  #listen(maxBytes: number): Promise<Uint8Array> {
    const req = this.#req;
    return new Promise((resolve, reject) => {
      const chunks: Uint8Array[] = [];
      let size = 0;
      const onData = (chunk: Uint8Array): void => {
        size += chunk.length;
        if (size > maxBytes) {
          cleanup();
          req.resume();
          reject(tooLarge(maxBytes));
          return;
        }
        chunks.push(chunk);
      };
      const onEnd = (): void => {
        cleanup();
        const whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
        resolve(new Uint8Array(whole.buffer, whole.byteOffset, whole.length));
      };
      // A client going away mid-body ends the read: with "error", or only "close".
      const onGone = (): void => {
        cleanup();
        reject(aborted());
      };
      const cleanup = (): void => {
        req.off("data", onData);
        req.off("end", onEnd);
        req.off("error", onGone);
        req.off("close", onGone);
      };
      req.on("data", onData);
      req.on("end", onEnd);
      req.on("error", onGone);
      req.on("close", onGone);
      if (req.destroyed) onGone();
    });
  }
}

const afterRead = NodeBodyReader.afterRead;

function settle<T>(read: () => T): Promise<T> {
  try {
    return Promise.resolve(read());
  } catch (error) {
    return Promise.reject(error);
  }
}

function aborted(): HttpError {
  return new HttpError(
    "ERR_HTTP_ABORTED",
    "Cannot read the request body: the client closed the connection before sending it whole",
  );
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(
    "ERR_HTTP_BODY_TOO_LARGE",
    `Cannot accept the request body: it is larger than ${maxBytes} bytes`,
  );
}

function splitTarget(target: string): [path: string, query: string] {
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
    ? [pathAndQuery, ""]
    : [pathAndQuery.slice(0, question), pathAndQuery.slice(question + 1)];
}

/** The origins of the hosts seen lately, by scheme and host: most requests name one of a few. */
const origins = { http: new Map<string, string>(), https: new Map<string, string>() };
const MAX_ORIGINS = 256;

function originOf(
  req: NodeListenerRequest,
  host: string | undefined,
  proto: string | undefined,
): string {
  const scheme = proto ??
    ("encrypted" in req.socket && req.socket.encrypted === true ? "https" : "http");
  if (host !== undefined) {
    const known = scheme === "http" ? origins.http : scheme === "https" ? origins.https : undefined;
    const origin = known?.get(host);
    if (origin !== undefined) return origin;
    if (HOST_PATTERN.test(host)) {
      const made = `${scheme}://${host}`;
      if (known !== undefined) {
        if (known.size >= MAX_ORIGINS) known.clear();
        known.set(host, made);
      }
      return made;
    }
  }
  const address = req.socket.localAddress ?? "127.0.0.1";
  const shown = address.includes(":") ? `[${address}]` : address;
  return `${scheme}://${shown}:${req.socket.localPort ?? 80}`;
}

/** What {@linkcode send} sent: the body's bytes, and whether it went whole (the client stayed). */
interface Sent {
  readonly bytes: number;
  readonly whole: boolean;
  /** The status sent instead of the response's: a stream that failed before its first chunk. */
  readonly status?: number;
}

const NOTHING: Sent = { bytes: 0, whole: true };

/**
 * The headers to send: the response's, with a content length and the request
 * id when given, in one new object (none when nothing is added).
 */
function headersToSend(
  headers: Readonly<Record<string, string>> | undefined,
  length: string | undefined,
  requestId: string | undefined,
): Readonly<Record<string, string>> | undefined {
  if (length === undefined && requestId === undefined) return headers;
  const sent = mergeHeaders(headers);
  if (length !== undefined) sent["content-length"] = length;
  if (requestId !== undefined) sent["x-request-id"] = requestId;
  return sent;
}

async function send(
  res: NodeListenerResponse,
  response: HttpResponse,
  method: string,
  request: NodeRequest | undefined,
  options: NodeListenerOptions,
  requestId: string | undefined,
): Promise<Sent> {
  const body = response.body;
  const bodiless = method === "HEAD" || response.status === 204 || response.status === 304;
  if (Array.isArray(body)) {
    const parts = body as readonly Uint8Array[];
    let length = 0;
    for (const part of parts) length += part.byteLength;
    res.writeHead(response.status, headersToSend(response.headers, String(length), requestId));
    if (bodiless) {
      res.end();
      return NOTHING;
    }
    // Corked, the parts leave in one write without being joined first.
    res.cork();
    for (let i = 0; i + 1 < parts.length; i++) res.write(parts[i]!);
    res.end(parts.length > 0 ? parts[parts.length - 1] : undefined);
    res.uncork();
    return { bytes: length, whole: true };
  }
  if (body === undefined || typeof body === "string" || body instanceof Uint8Array) {
    const length = body === undefined
      ? 0
      : typeof body === "string"
      ? Buffer.byteLength(body)
      : body.byteLength;
    const lengthSaid = response.status === 204 || response.status === 304 ||
      response.headers?.["content-length"] !== undefined;
    res.writeHead(
      response.status,
      headersToSend(response.headers, lengthSaid ? undefined : String(length), requestId),
    );
    res.end(bodiless ? undefined : body);
    return bodiless ? NOTHING : { bytes: length, whole: true };
  }
  const iterator = (body as AsyncIterable<string | Uint8Array>)[Symbol.asyncIterator]();
  if (bodiless) {
    await iterator.return?.();
    res.writeHead(response.status, headersToSend(response.headers, undefined, requestId));
    res.end();
    return NOTHING;
  }
  // Without a request record (its target was malformed) the response is an error, never a stream.
  return stream(res, response, iterator, request!.signal, options, requestId);
}

async function stream(
  res: NodeListenerResponse,
  response: HttpResponse,
  iterator: AsyncIterator<string | Uint8Array>,
  signal: AbortSignal,
  options: NodeListenerOptions,
  requestId: string | undefined,
): Promise<Sent> {
  let done = false;
  let bytes = 0;
  try {
    let next = await iterator.next();
    res.writeHead(response.status, headersToSend(response.headers, undefined, requestId));
    while (next.done !== true) {
      bytes += typeof next.value === "string"
        ? Buffer.byteLength(next.value)
        : next.value.byteLength;
      if (!res.write(next.value)) await drained(res, signal);
      if (signal.aborted) break;
      next = await iterator.next();
    }
    done = next.done === true;
    if (done) res.end();
    return { bytes, whole: done };
  } catch (error) {
    done = true;
    if (!res.headersSent) {
      if (statusOf(error) === 500) options.onError?.(error);
      const failure = errorResponse(error);
      res.writeHead(failure.status, headersToSend(failure.headers, undefined, requestId));
      res.end(failure.body as string);
      return {
        bytes: Buffer.byteLength(failure.body as string),
        whole: true,
        status: failure.status,
      };
    }
    options.onError?.(error);
    res.destroy(error instanceof Error ? error : new Error(String(error)));
    return { bytes, whole: false };
  } finally {
    if (!done) {
      await iterator.return?.();
      res.destroy();
    }
  }
}

function drained(res: NodeListenerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    // A response closed while it waits (an HTTP/2 stream reset) never drains: its close ends the wait too.
    const finish = (): void => {
      res.off("drain", finish);
      res.off("close", finish);
      signal.removeEventListener("abort", finish);
      resolve();
    };
    res.on("drain", finish);
    res.on("close", finish);
    signal.addEventListener("abort", finish);
  });
}
