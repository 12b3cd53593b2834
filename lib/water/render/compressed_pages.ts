import {
  compressBytes,
  type ContentCoding,
  mergeHeaders,
  negotiateEncoding,
} from "../../http/_internal.ts";
import { type HttpRequest, type HttpResponse } from "../../http/mod.ts";

/** Answers never kept, however big (see {@linkcode neverKept}). */
const notToKeep = new WeakSet<HttpResponse>();

/**
 * Marks an answer that {@linkcode CompressedPages} must not keep, though it
 * is held whole: one cheap to make again, and whose requests rarely repeat
 * (an aggregation's page, whose groups are kept apart), so that it does not
 * push pages that are dear to make out of the budget.
 * @param response the answer
 * @returns the same answer
 */
export function neverKept<T extends HttpResponse>(response: T): T {
  notToKeep.add(response);
  return response;
}

/** A compressed page kept: its headers (the next link among them) and bytes. */
interface Kept {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
}

/**
 * Pages kept whole, by coding, Accept header and URL: a store never
 * changes, so a page's bytes are a function of its URL (origin included,
 * since links carry it); one is kept per store, and a reloaded store gets
 * a new one. Big JSON pages a client takes compressed are kept compressed:
 * a client downloading in 10,000-row pages sees each page once, so the row
 * render cache does not spare it the compression; this does, for every
 * client after the first. Pages a client takes as they are are kept as one
 * block from {@linkcode IDENTITY_MIN_BYTES} up to an eighth of the budget:
 * a page of cached rows is otherwise gathered from a part a row and written
 * in as many pieces each time. Pages below `minBytes` are left to the app's
 * compression layer. Least recently used pages go first past `maxBytes`.
 */
export class CompressedPages {
  readonly #maxBytes: number;
  readonly #minBytes: number;
  readonly #kept = new Map<string, Kept>();
  #bytes = 0;

  /**
   * @param maxBytes compressed bytes kept at most; 0 keeps none
   * @param minBytes uncompressed page size from which pages are compressed and kept
   */
  constructor(maxBytes: number, minBytes = 64 * 1024) {
    this.#maxBytes = maxBytes;
    this.#minBytes = minBytes;
  }

  /**
   * Answers a page request: the kept page, or the page `compute` makes,
   * kept when it is a big JSON page the client takes compressed (compressed
   * first), or a page of at least {@linkcode IDENTITY_MIN_BYTES} a client
   * takes as it is (joined into one block, so that it leaves in one write).
   * `compute` is told the coding the client takes, and may compress the page
   * itself (as it renders); such a page is kept as it comes. A kept page is
   * answered at once, without a promise.
   * @param request the request
   * @param compute makes the page for the coding (and may throw as the handler does)
   * @returns the answer
   */
  answer(
    request: HttpRequest,
    compute: (coding: ContentCoding | undefined) => HttpResponse | Promise<HttpResponse>,
  ): HttpResponse | Promise<HttpResponse> {
    const coding = request.method === "HEAD"
      ? undefined
      : negotiateEncoding(request.headers["accept-encoding"]);
    if (this.#maxBytes === 0 || request.method !== "GET") return compute(coding);
    // Accept picks JSON or CSV when $format does not: the same URL is two pages.
    const key = `${coding ?? "identity"} ${
      request.headers["accept"] ?? ""
    } ${request.origin}${request.path}?${request.query}`;
    const hit = this.#kept.get(key);
    if (hit !== undefined) {
      this.#kept.delete(key);
      this.#kept.set(key, hit);
      return { status: 200, headers: hit.headers, body: hit.body };
    }
    return coding === undefined
      ? this.#keepAsItIs(key, compute(undefined))
      : this.#keepCompressed(key, coding, compute(coding));
  }

  async #keepAsItIs(
    key: string,
    computed: HttpResponse | Promise<HttpResponse>,
  ): Promise<HttpResponse> {
    const response = await computed;
    const parts = bufferedParts(response);
    if (parts === undefined) return response;
    const size = sizeOf(parts);
    // Past an eighth of the budget a page is not kept as it is: a download of big pages would flush the rest.
    if (size < IDENTITY_MIN_BYTES || size > this.#maxBytes / 8) return response;
    const joined = parts.length === 1 ? parts[0]! : Buffer.concat(parts, size);
    this.#keep(key, response.headers ?? {}, joined);
    return { ...response, body: joined };
  }

  async #keepCompressed(
    key: string,
    coding: ContentCoding,
    computed: HttpResponse | Promise<HttpResponse>,
  ): Promise<HttpResponse> {
    const response = await computed;
    if (response.status === 200 && response.headers?.["content-encoding"] === coding) {
      const parts = response.body as Uint8Array[];
      const joined = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      this.#keep(key, response.headers, joined);
      return { ...response, body: joined };
    }
    const parts = bufferedParts(response);
    if (
      parts === undefined ||
      !String(response.headers?.["content-type"]).startsWith("application/json")
    ) return response;
    const size = sizeOf(parts);
    if (size < this.#minBytes) return response;
    const compressed = await compressBytes(
      parts.length === 1 ? parts[0]! : Buffer.concat(parts, size),
      coding,
    );
    const headers = mergeHeaders(response.headers, {
      vary: "Accept-Encoding",
      "content-encoding": coding,
    });
    this.#keep(key, headers, compressed);
    return { status: 200, headers, body: compressed };
  }

  /** Keeps a compressed page, the least recently used ones going past the budget. */
  #keep(key: string, headers: Readonly<Record<string, string>>, body: Uint8Array): void {
    if (body.byteLength > this.#maxBytes) return;
    // Two misses of one URL at once both keep it: the second replaces the first, and its bytes with it.
    const replaced = this.#kept.get(key);
    if (replaced !== undefined) this.#bytes -= replaced.body.byteLength;
    this.#kept.set(key, { headers, body });
    this.#bytes += body.byteLength;
    for (const [old, kept] of this.#kept) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#kept.delete(old);
      this.#bytes -= kept.body.byteLength;
    }
  }
}

/** The smallest page kept as it is: below it, joining its rows each time costs little. */
export const IDENTITY_MIN_BYTES = 16 * 1024;

/** A 200 answer's body as parts, when it is held whole: one block (rendered at once) or parts (rows from the render cache). */
function bufferedParts(response: HttpResponse): Uint8Array[] | undefined {
  if (response.status !== 200 || notToKeep.has(response)) return undefined;
  const body = response.body;
  return body instanceof Uint8Array
    ? [body]
    : Array.isArray(body)
    ? body as Uint8Array[]
    : undefined;
}

function sizeOf(parts: readonly Uint8Array[]): number {
  let size = 0;
  for (const part of parts) size += part.byteLength;
  return size;
}
