import { once } from "node:events";
import { createServer, request as httpRequest } from "node:http";
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { createBodyReader } from "../../lib/http/read_body.ts";
import {
  createNodeListener,
  type Handler,
  type HttpRequest,
  type HttpResponse,
  type NodeListenerOptions,
} from "../../lib/http/mod.ts";

/** Fields of {@linkcode makeRequest}; every one has a harmless default. */
export interface MakeRequestInit {
  method?: string;
  path?: string;
  query?: string;
  headers?: Readonly<Record<string, string>>;
  remoteAddress?: string;
  origin?: string;
  signal?: AbortSignal;
  /** The body, whole or as chunks; chunks reach the reader one by one. */
  body?: string | Uint8Array | readonly (string | Uint8Array)[];
}

const encoder = new TextEncoder();

/**
 * Builds a request record for calling a handler directly, without a server.
 * @param init the fields to set
 * @returns the request record
 */
export function makeRequest(init: MakeRequestInit = {}): HttpRequest {
  const headers = init.headers ?? {};
  const raw = init.body ?? [];
  const chunks = (typeof raw === "string" || raw instanceof Uint8Array ? [raw] : raw)
    .map((chunk) => (typeof chunk === "string" ? encoder.encode(chunk) : chunk));
  return {
    method: init.method ?? "GET",
    path: init.path ?? "/",
    query: init.query ?? "",
    headers,
    remoteAddress: init.remoteAddress ?? "127.0.0.1",
    origin: init.origin ?? "http://localhost:8000",
    signal: init.signal ?? new AbortController().signal,
    body: createBodyReader(() => chunksOf(chunks), headers["content-length"]),
  };
}

async function* chunksOf(chunks: readonly Uint8Array[]): AsyncGenerator<Uint8Array> {
  yield* chunks;
}

/**
 * Calls a handler the way an adapter does, turning a synchronous throw into a
 * rejection, so `assert.rejects` sees both.
 * @param handler the handler
 * @param request the request
 * @returns the response
 */
export async function callHandler(handler: Handler, request: HttpRequest): Promise<HttpResponse> {
  return await handler(request);
}

/** Reads a response body that is text, bytes, parts or chunks into one buffer (a compressed body stays bytes). */
export async function bodyBytes(response: HttpResponse): Promise<Buffer> {
  const body = response.body;
  if (body === undefined) return Buffer.alloc(0);
  if (typeof body === "string") return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const chunks: Buffer[] = [];
  for await (const chunk of body as AsyncIterable<string | Uint8Array>) {
    chunks.push(
      typeof chunk === "string"
        ? Buffer.from(chunk)
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength),
    );
  }
  return Buffer.concat(chunks);
}

/** Reads a response body that is text, bytes or chunks into one string. */
export async function bodyText(response: HttpResponse): Promise<string> {
  const body = response.body;
  if (body === undefined) return "";
  if (typeof body === "string") return body;
  if (body instanceof Uint8Array) return new TextDecoder().decode(body);
  let text = "";
  for await (const chunk of body) {
    text += typeof chunk === "string" ? chunk : new TextDecoder().decode(chunk);
  }
  return text;
}

/** A running test server. */
export interface TestServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  readonly url: string;
  readonly port: number;
  /** Closes the server and every connection it holds. */
  close(): Promise<void>;
}

/**
 * Serves a handler through the `node:http` adapter on `127.0.0.1`, port 0.
 * @param handler the handler
 * @param options adapter options
 * @returns the server's URL and a close function
 */
export async function startServer(
  handler: Handler,
  options: NodeListenerOptions = {},
): Promise<TestServer> {
  const server = createServer(createNodeListener(handler, options));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    async close(): Promise<void> {
      const closed = once(server, "close");
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}

/** Options of {@linkcode rawRequest}. */
export interface RawRequestInit {
  method?: string;
  /** The request target exactly as sent, e.g. `/a?b=1` or `http://example.org/a`. */
  path?: string;
  headers?: OutgoingHttpHeaders | readonly string[];
  /** Body chunks, written one after another; the request then ends. */
  body?: readonly (string | Uint8Array)[];
}

/** What {@linkcode rawRequest} received. */
export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
}

/**
 * Sends one request with `node:http` to `127.0.0.1`, for what `fetch` cannot
 * send (an absolute-form target, a chosen `Host`, repeated headers) or hides
 * (a HEAD response's bytes). The connection is not reused.
 * @param port the server's port
 * @param init method, target, headers and body
 * @returns status, headers and the body bytes
 */
export async function rawRequest(port: number, init: RawRequestInit = {}): Promise<RawResponse> {
  const req = httpRequest({
    host: "127.0.0.1",
    port,
    method: init.method ?? "GET",
    path: init.path ?? "/",
    headers: init.headers ?? {},
    agent: false,
  });
  for (const chunk of init.body ?? []) req.write(chunk);
  req.end();
  const [res] = (await once(req, "response")) as [IncomingMessage];
  const chunks: Buffer[] = [];
  for await (const chunk of res) chunks.push(chunk as Buffer);
  return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) };
}

/** What {@linkcode requestFrom} read. */
export interface FromAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly text: string;
}

/**
 * Sends one HTTP/1.1 request from a chosen loopback address (`127.0.0.2`,
 * ...), so that a server sees several clients, or a proxy and a client.
 * @param url the server's origin
 * @param path the path and query
 * @param init method, headers, body, and the local address (`127.0.0.1` by default)
 * @returns the status, headers and body text
 */
export function requestFrom(
  url: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; from?: string } = {},
): Promise<FromAnswer> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(new URL(path, url), {
      method: init.method ?? "GET",
      headers: init.headers ?? {},
      localAddress: init.from ?? "127.0.0.1",
    }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (text += chunk));
      response.on(
        "end",
        () => resolve({ status: response.statusCode!, headers: response.headers, text }),
      );
    });
    sent.on("error", reject);
    sent.end(init.body);
  });
}
