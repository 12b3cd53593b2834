import { errorResponse, statusOf } from "./error_response.ts";
import { createBodyReader } from "./read_body.ts";
import type { Handler, HttpRequest, HttpResponse } from "./types.ts";

/** Options of {@linkcode createFetchHandler}. */
export interface FetchHandlerOptions {
  /**
   * Peer address to report, since a Web `Request` does not carry one.
   * @default {""}
   */
  remoteAddress?: string;
  /** Called with every error that becomes a 500. */
  onError?: (error: unknown) => void;
}

/**
 * Adapts a {@linkcode Handler} to the Web-standard `(Request) => Promise<Response>`
 * shape used by Deno, Bun and Workers.
 * @param handler the handler to serve
 * @param options peer address and error hook
 * @returns the fetch handler
 * @example
 * ```ts
 * Deno.serve(createFetchHandler(handler));
 * ```
 */
export function createFetchHandler(
  handler: Handler,
  options: FetchHandlerOptions = {},
): (request: Request) => Promise<Response> {
  const fail = (error: unknown): HttpResponse => {
    if (statusOf(error) === 500) options.onError?.(error);
    return errorResponse(error);
  };
  return async function fetchHandler(request: Request): Promise<Response> {
    const method = request.method.toUpperCase();
    let response: HttpResponse;
    try {
      response = await handler(toRequest(request, options.remoteAddress ?? ""));
    } catch (error) {
      response = fail(error);
    }
    const body = response.body;
    const bodiless = method === "HEAD" || response.status === 204 || response.status === 304;
    if (
      body === undefined || typeof body === "string" || body instanceof Uint8Array ||
      Array.isArray(body) || bodiless
    ) {
      return toResponse(response, bodiless);
    }
    // Pull the first chunk before answering, so that a stream failing at
    // once still gets a proper error status, as with the node adapter.
    const iterator = (body as AsyncIterable<string | Uint8Array>)[Symbol.asyncIterator]();
    let first: IteratorResult<string | Uint8Array>;
    try {
      first = await iterator.next();
    } catch (error) {
      return toResponse(fail(error), false);
    }
    return streamResponse(response, iterator, first);
  };
}

function toRequest(request: Request, remoteAddress: string): HttpRequest {
  const url = new URL(request.url);
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name.toLowerCase()] = value;
  });
  const stream = request.body;
  return {
    method: request.method.toUpperCase(),
    path: url.pathname,
    query: url.search.slice(1),
    headers,
    remoteAddress,
    origin: url.origin,
    signal: request.signal,
    body: createBodyReader(() => stream ?? emptyChunks(), headers["content-length"]),
  };
}

async function* emptyChunks(): AsyncGenerator<Uint8Array> {
  // A request without a body yields no chunks.
}

const encoder = new TextEncoder();

function toResponse(response: HttpResponse, bodiless: boolean): Response {
  const headers = new Headers(response.headers);
  const body = response.body;
  if (body === undefined || bodiless) {
    if (
      body !== undefined && typeof body !== "string" && !(body instanceof Uint8Array) &&
      !Array.isArray(body)
    ) {
      const ended = (body as AsyncIterable<unknown>)[Symbol.asyncIterator]().return?.();
      void Promise.resolve(ended).catch(() => undefined);
    }
    return new Response(null, { status: response.status, headers });
  }
  // Bodies are never views of a SharedArrayBuffer; the DOM's types want that said.
  if (Array.isArray(body)) {
    return new Response(new Blob(body as Uint8Array<ArrayBuffer>[]), {
      status: response.status,
      headers,
    });
  }
  return new Response(body as string | Uint8Array<ArrayBuffer>, {
    status: response.status,
    headers,
  });
}

function streamResponse(
  response: HttpResponse,
  iterator: AsyncIterator<string | Uint8Array>,
  first: IteratorResult<string | Uint8Array>,
): Response {
  let pending: IteratorResult<string | Uint8Array> | undefined = first;
  const readable = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = pending ?? await iterator.next();
      pending = undefined;
      if (next.done === true) {
        controller.close();
        return;
      }
      controller.enqueue(typeof next.value === "string" ? encoder.encode(next.value) : next.value);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
  return new Response(readable, {
    status: response.status,
    headers: new Headers(response.headers),
  });
}
