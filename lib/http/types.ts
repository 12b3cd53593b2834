/** Reads a request body at most once, refusing more than `maxBytes`. */
export interface BodyReader {
  /**
   * Reads the whole body.
   * @param maxBytes largest accepted size; a larger body throws `ERR_HTTP_BODY_TOO_LARGE`
   */
  bytes(maxBytes: number): Promise<Uint8Array>;
}

/**
 * A request as handlers see it: plain data, no socket, so a handler can be
 * called directly in a test.
 */
export interface HttpRequest {
  /** Upper-case method, e.g. `GET`. */
  readonly method: string;
  /** The raw (still percent-encoded) path, without the query. */
  readonly path: string;
  /** The raw query string without the leading `?`; empty when absent. */
  readonly query: string;
  /** Header names in lower case; repeated headers joined with `, `. */
  readonly headers: Readonly<Record<string, string>>;
  /** Address of the peer, e.g. `127.0.0.1`. */
  readonly remoteAddress: string;
  /** Scheme, host and port the client addressed, e.g. `http://localhost:8000`. */
  readonly origin: string;
  /** Aborted when the client goes away before the response is complete. */
  readonly signal: AbortSignal;
  /** The body, read on demand with a size limit. */
  readonly body: BodyReader;
}

/** Chunks of a streamed response body. */
export type BodyChunks = AsyncIterable<string | Uint8Array>;

/**
 * A complete body in parts, sent one after another without being joined
 * first (e.g. a cached block between a head and a tail).
 */
export type BodyParts = readonly Uint8Array[];

/** A response body: text, bytes, parts of bytes, or chunks streamed with backpressure. */
export type ResponseBody = string | Uint8Array | BodyParts | BodyChunks;

/** A response as handlers produce it. */
export interface HttpResponse {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: ResponseBody;
}

/** A function from a request record to a response record. */
export type Handler = (request: HttpRequest) => HttpResponse | Promise<HttpResponse>;

/** Path parameters captured by the router, already percent-decoded. */
export type RouteParams = Readonly<Record<string, string>>;

/** A handler that also receives the path parameters of its route. */
export type RouteHandler = (
  request: HttpRequest,
  params: RouteParams,
) => HttpResponse | Promise<HttpResponse>;
