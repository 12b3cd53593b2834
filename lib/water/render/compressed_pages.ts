import {
  compressBytes,
  type ContentCoding,
  mergeHeaders,
  negotiateEncoding,
} from "../../http/_internal.ts";
import { type HttpRequest, type HttpResponse } from "../../http/mod.ts";

/** A compressed page kept: its headers (the next link among them) and bytes. */
interface Kept {
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Uint8Array;
}

/**
 * Big JSON pages compressed once and kept, by coding and URL: a store
 * never changes, so a page's bytes are a function of its URL (origin
 * included, since links carry it); one is kept per store, and a reloaded
 * store gets a new one. A client downloading in 10,000-row pages
 * sees each page once, so the row render cache does not spare it the
 * compression; this does, for every client after the first. Pages below
 * `minBytes` are left to the app's compression layer. Least recently used
 * pages go first past `maxBytes`.
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
   * Answers a page request: the kept compressed page, or the page `compute`
   * makes, compressed and kept when it is a big JSON page the client takes
   * compressed. `compute` is told the coding the client takes, and may
   * compress the page itself (as it renders); such a page is kept as it comes.
   * @param request the request
   * @param compute makes the page for the coding (and may throw as the handler does)
   * @returns the answer
   */
  async answer(
    request: HttpRequest,
    compute: (coding: ContentCoding | undefined) => HttpResponse | Promise<HttpResponse>,
  ): Promise<HttpResponse> {
    const coding = request.method === "HEAD"
      ? undefined
      : negotiateEncoding(request.headers["accept-encoding"]);
    if (coding === undefined) return compute(undefined);
    const key = `${coding} ${request.origin}${request.path}?${request.query}`;
    const hit = this.#maxBytes === 0 ? undefined : this.#kept.get(key);
    if (hit !== undefined) {
      this.#kept.delete(key);
      this.#kept.set(key, hit);
      return { status: 200, headers: hit.headers, body: hit.body };
    }
    const response = await compute(coding);
    if (response.status === 200 && response.headers?.["content-encoding"] === coding) {
      if (this.#maxBytes === 0) return response;
      const parts = response.body as Uint8Array[];
      const joined = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
      this.#keep(key, response.headers, joined);
      return { ...response, body: joined };
    }
    // Left to the app's compression layer when nothing is kept here.
    if (this.#maxBytes === 0) return response;
    const body = response.body;
    // A page is one block of bytes (rendered at once) or parts (rows from the render cache).
    const parts = body instanceof Uint8Array
      ? [body]
      : Array.isArray(body)
      ? body as Uint8Array[]
      : undefined;
    if (
      response.status !== 200 || parts === undefined ||
      !String(response.headers?.["content-type"]).startsWith("application/json")
    ) return response;
    const size = parts.reduce((sum, part) => sum + part.byteLength, 0);
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
    this.#kept.set(key, { headers, body });
    this.#bytes += body.byteLength;
    for (const [old, kept] of this.#kept) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#kept.delete(old);
      this.#bytes -= kept.body.byteLength;
    }
  }
}
