import { compressBytes, type HttpRequest, type HttpResponse, negotiateEncoding } from "../http/mod.ts";

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
   * @param maxBytes compressed bytes kept at most; 0 keeps none (and compresses nothing here)
   * @param minBytes uncompressed page size from which pages are compressed and kept
   */
  constructor(maxBytes: number, minBytes = 64 * 1024) {
    this.#maxBytes = maxBytes;
    this.#minBytes = minBytes;
  }

  /**
   * Answers a page request: the kept compressed page, or the page `compute`
   * makes, compressed and kept when it is a big JSON page the client takes compressed.
   * @param request the request
   * @param compute makes the page (and may throw as the handler does)
   * @returns the answer
   */
  async answer(request: HttpRequest, compute: () => HttpResponse): Promise<HttpResponse> {
    const coding = this.#maxBytes === 0 || request.method === "HEAD" ? undefined : negotiateEncoding(request.headers["accept-encoding"]);
    if (coding === undefined) return compute();
    const key = `${coding} ${request.origin}${request.path}?${request.query}`;
    const hit = this.#kept.get(key);
    if (hit !== undefined) {
      this.#kept.delete(key);
      this.#kept.set(key, hit);
      return { status: 200, headers: hit.headers, body: hit.body };
    }
    const response = compute();
    const body = response.body;
    // A page is one block of bytes (rendered at once) or parts (rows from the render cache).
    const parts = body instanceof Uint8Array ? [body] : Array.isArray(body) ? body as Uint8Array[] : undefined;
    if (response.status !== 200 || parts === undefined || !String(response.headers?.["content-type"]).startsWith("application/json")) return response;
    const size = parts.reduce((sum, part) => sum + part.byteLength, 0);
    if (size < this.#minBytes) return response;
    const compressed = await compressBytes(parts.length === 1 ? parts[0]! : Buffer.concat(parts, size), coding);
    const headers = { ...response.headers, vary: "Accept-Encoding", "content-encoding": coding };
    if (compressed.byteLength <= this.#maxBytes) {
      this.#kept.set(key, { headers, body: compressed });
      this.#bytes += compressed.byteLength;
      for (const [old, kept] of this.#kept) {
        if (this.#bytes <= this.#maxBytes) break;
        this.#kept.delete(old);
        this.#bytes -= kept.body.byteLength;
      }
    }
    return { status: 200, headers, body: compressed };
  }
}
