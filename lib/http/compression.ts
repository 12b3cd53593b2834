import { pipeline, Readable } from "node:stream";
import {
  brotliCompress,
  constants,
  crc32,
  createBrotliCompress,
  createDeflateRaw,
  createGzip,
  type DeflateRaw,
  gzip,
} from "node:zlib";
import { mergeHeaders } from "./merge_headers.ts";
import type { Handler, HttpRequest, HttpResponse } from "./types.ts";

/** A content coding this server offers. */
export type ContentCoding = "br" | "gzip";

/** Options of {@linkcode withCompression}. */
export interface CompressionOptions {
  /**
   * Bodies smaller than this are sent as they are (a stream, whose size is
   * not known, is always compressed).
   * @default {1024}
   */
  readonly minBytes?: number;
}

/** Codings in the order this server prefers them when the client likes them equally. */
const OFFERED: readonly ContentCoding[] = ["br", "gzip"];
/** Above this, a body is compressed for throughput (brotli 1, gzip 1); below it, for size (brotli 5, gzip 6). */
const BIG = 1024 * 1024;
const COMPRESSIBLE = /^(?:application\/(?:[\w.+-]*\+)?json|text\/csv)(?:\s*;|$)/i;

/**
 * Chooses the content coding of a response from `Accept-Encoding` (RFC 9110
 * §12.5.3): the offered coding with the highest q-value above 0, `br` before
 * `gzip` on a tie; `*` stands for codings not named; `identity` (or no
 * header, or nothing acceptable) means none.
 *
 * One exception, for the clients that ask for what they cannot read: `br`
 * named alone is not taken at its word. The official DataStream clients all
 * send `Accept-Encoding: br`, but Python's `requests` decodes `br` only when
 * a brotli module happens to be installed, and the shell client's `curl`
 * (without `--compressed`) decodes nothing; the DataStream gateway answers
 * them uncompressed, and so does this. `br` is chosen when the request also
 * accepts `gzip`, `deflate` or `*` (browsers, `curl --compressed`, libcurl,
 * R's httr2, Node's `fetch` when it sets the header itself), or when it refuses
 * `identity` (`identity;q=0`, or `*;q=0` without `identity`).
 * @param header the request's `Accept-Encoding`
 * @returns `br`, `gzip`, or undefined for identity
 */
export function negotiateEncoding(header: string | undefined): ContentCoding | undefined {
  if (header === undefined) return undefined;
  const weights = new Map<string, number>();
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.split(";").map((text) => text.trim());
    if (name === "") continue;
    let q = 1;
    for (const param of params) {
      const match = /^q\s*=\s*([01](?:\.\d{0,3})?)$/i.exec(param);
      if (match !== null) q = Number(match[1]);
    }
    weights.set(name.toLowerCase(), q);
  }
  const star = weights.get("*");
  const accepts = (name: string): boolean => (weights.get(name) ?? 0) > 0;
  const identityRefused = (weights.get("identity") ?? star ?? 1) === 0;
  const brTrusted = identityRefused || accepts("gzip") || accepts("x-gzip") || accepts("deflate") ||
    accepts("*");
  let best: ContentCoding | undefined;
  let bestQ = 0;
  for (const coding of OFFERED) {
    if (coding === "br" && !brTrusted) continue;
    const q = weights.get(coding) ?? (coding === "gzip" ? weights.get("x-gzip") : undefined) ??
      star ?? 0;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  return best;
}

/**
 * Compresses a handler's JSON and CSV answers as the client accepts them
 * (`br` or `gzip`, see {@linkcode negotiateEncoding}), with
 * `Vary: Accept-Encoding`: a whole body at once off the main thread, a
 * stream chunk by chunk with backpressure (never buffered whole). Limits
 * such as `MAX_RESPONSE_BYTES` are the handler's, on the uncompressed
 * bytes. A strong `ETag` becomes weak, since the bytes differ per coding
 * (`If-None-Match` compares weakly).
 * @param handler the handler
 * @param options the size below which bodies are left alone
 * @returns the compressing handler
 */
export function withCompression(handler: Handler, options: CompressionOptions = {}): Handler {
  const minBytes = options.minBytes ?? 1024;
  // No promise of its own for an answer that is not one: small answers (most of them) pass untouched.
  return (request: HttpRequest): HttpResponse | Promise<HttpResponse> => {
    const answer = handler(request);
    return answer instanceof Promise
      ? answer.then((response) => compressResponse(request, response, minBytes))
      : compressResponse(request, answer, minBytes);
  };
}

function compressResponse(
  request: HttpRequest,
  response: HttpResponse,
  minBytes: number,
): HttpResponse | Promise<HttpResponse> {
  const body = response.body;
  if (body === undefined) return response;
  // A body below the threshold is never compressed, so it does not vary by Accept-Encoding either.
  const size = bufferedSize(body, minBytes);
  if (size !== undefined && size < minBytes) return response;
  const headers = response.headers ?? {};
  const type = headers["content-type"];
  if (type === undefined || !COMPRESSIBLE.test(type) || headers["content-encoding"] !== undefined) {
    return response;
  }
  if (response.status === 204 || response.status === 304 || response.status === 206) {
    return response;
  }
  const vary = headers["vary"] === undefined
    ? "Accept-Encoding"
    : `${headers["vary"]}, Accept-Encoding`;
  const coding = request.method === "HEAD"
    ? undefined
    : negotiateEncoding(request.headers["accept-encoding"]);
  if (coding === undefined) return { ...response, headers: mergeHeaders(headers, { vary }) };
  // The length changes with the body (the adapter says the new one); built by assignment (see mergeHeaders).
  const compressed: Record<string, string> = {};
  for (const name in headers) if (name !== "content-length") compressed[name] = headers[name]!;
  compressed["vary"] = vary;
  compressed["content-encoding"] = coding;
  const etag = headers["etag"];
  if (etag !== undefined) compressed["etag"] = etag.startsWith("W/") ? etag : `W/${etag}`;
  if (size === undefined) {
    return {
      ...response,
      headers: compressed,
      body: compressStream(body as AsyncIterable<string | Uint8Array>, coding),
    };
  }
  return compressWhole(joined(body as string | Uint8Array | readonly Uint8Array[]), coding, size)
    .then((bytes) => ({ ...response, headers: compressed, body: bytes }));
}

/** The bytes of a body held whole; undefined for a stream. */
function bufferedSize(
  body: NonNullable<HttpResponse["body"]>,
  minBytes: number,
): number | undefined {
  // At most 3 bytes a UTF-16 unit: a string that short is below the threshold without counting its bytes.
  if (typeof body === "string") {
    return body.length * 3 < minBytes ? body.length : Buffer.byteLength(body);
  }
  if (body instanceof Uint8Array) return body.byteLength;
  if (Array.isArray(body)) {
    return (body as readonly Uint8Array[]).reduce((sum, part) => sum + part.byteLength, 0);
  }
  return undefined;
}

function joined(body: string | Uint8Array | readonly Uint8Array[]): Buffer {
  if (typeof body === "string") return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  return Buffer.concat(body as Uint8Array[]);
}

/**
 * Compresses a whole body off the main thread, at the levels
 * {@linkcode withCompression} uses (for throughput above 1 MiB).
 * @param bytes the body
 * @param coding `br` or `gzip`
 * @returns the compressed bytes
 */
export function compressBytes(bytes: Uint8Array, coding: ContentCoding): Promise<Uint8Array> {
  return compressWhole(
    Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    coding,
    bytes.byteLength,
  );
}

function compressWhole(bytes: Buffer, coding: ContentCoding, size: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const done = (
      error: Error | null,
      result: Buffer,
    ): void => (error === null ? resolve(result) : reject(error));
    if (coding === "br") {
      brotliCompress(bytes, {
        params: {
          [constants.BROTLI_PARAM_QUALITY]: size > BIG ? 1 : 5,
          [constants.BROTLI_PARAM_SIZE_HINT]: size,
        },
      }, done);
    } else {
      gzip(bytes, { level: size > BIG ? 1 : 6 }, done);
    }
  });
}

/** A stream compressed as it is read; the source is closed when the reader stops early. */
function compressStream(
  source: AsyncIterable<string | Uint8Array>,
  coding: ContentCoding,
): AsyncIterable<Uint8Array> {
  const compressor = coding === "br"
    ? createBrotliCompress({ params: { [constants.BROTLI_PARAM_QUALITY]: 1 } })
    : createGzip({ level: 1 });
  // A pipeline, not pipe: a reader that stops early destroys the compressor, and with it the source, whose iterator is returned.
  pipeline(Readable.from(source, { objectMode: false }), compressor, () => {});
  return compressor;
}

/**
 * Compresses a big body made part by part, the making of each part (the
 * iterator's `next`, rendering the next rows, say) overlapping the
 * compression of the parts before it, which runs in the thread pool:
 * - `gzip`: each part is deflated on its own (level 1, ending on a sync
 *   flush, so that the pieces join into one deflate stream), several at once
 *   on the pool's threads; the CRC-32 is summed as the parts are made, and
 *   the answer is the gzip header, the pieces, a final empty block and the
 *   trailer (one gzip member, as RFC 1952 defines it, with a few bytes more
 *   than one zlib stream);
 * - `br`: the parts go through one compressor (quality 1), each written as
 *   it is made, the next part made while the pool compresses the last.
 * An error the iterator throws (a limit, a deadline) ends the compression
 * and is thrown again.
 * @param parts the body's parts, made on demand
 * @param coding `br` or `gzip`
 * @param options what to tell when a part has been read
 * @returns the compressed body, in parts
 */
export function compressParts(
  parts: Iterable<Uint8Array>,
  coding: ContentCoding,
  options: CompressPartsOptions = {},
): Promise<Uint8Array[]> {
  const release = options.release ?? (() => {});
  return coding === "gzip" ? gzipParts(parts, release) : brotliParts(parts, release);
}

/** Options of {@linkcode compressParts}. */
export interface CompressPartsOptions {
  /**
   * Told when a part is no longer read (compressed, or dropped on an
   * error), so that its memory can be used again, e.g. for a later part.
   */
  readonly release?: (part: Uint8Array) => void;
}

/** A gzip member's header: deflate, no name or time, the fastest level (XFL 4), Unix. */
const GZIP_HEADER = Uint8Array.of(0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 3);
/** A final, empty block with the fixed codes: BFINAL 1, BTYPE 01, the end-of-block code, byte-aligned. */
const FINAL_BLOCK = Uint8Array.of(0x03, 0x00);

async function gzipParts(
  parts: Iterable<Uint8Array>,
  release: (part: Uint8Array) => void,
): Promise<Uint8Array[]> {
  const pieces: Promise<Uint8Array>[] = [];
  const iterator = parts[Symbol.iterator]();
  let crc = 0;
  let size = 0;
  try {
    for (;;) {
      // The next part is made once a compressor is free for it: at most one part more than the compressors is held.
      const deflater = await takeDeflater();
      let next: IteratorResult<Uint8Array>;
      try {
        next = iterator.next();
      } catch (error) {
        giveBack(deflater);
        throw error;
      }
      if (next.done === true) {
        giveBack(deflater);
        break;
      }
      const part = next.value;
      crc = crc32(part, crc);
      size += part.byteLength;
      const piece = deflatePiece(deflater, part);
      // Awaited below; if a later part throws first, this one's outcome is dropped.
      piece.then(() => release(part), () => release(part));
      pieces.push(piece);
    }
  } catch (error) {
    await Promise.allSettled(pieces);
    throw error;
  }
  const trailer = new Uint8Array(8);
  const view = new DataView(trailer.buffer);
  view.setUint32(0, crc, true);
  view.setUint32(4, size % 2 ** 32, true);
  return [GZIP_HEADER, ...(await Promise.all(pieces)), FINAL_BLOCK, trailer];
}

/**
 * Raw deflate compressors kept from one page to the next (as many as the
 * thread pool has threads), each reset after its piece: making one costs a
 * few hundred kilobytes of zlib state, which a page of ten pieces would
 * otherwise allocate ten times. Each write is deflated and sync-flushed in
 * one pass of the pool.
 */
const idle: DeflateRaw[] = [];
const waiting: ((deflater: DeflateRaw) => void)[] = [];
let made = 0;
const MAX_DEFLATERS = Math.max(1, Number(process.env["UV_THREADPOOL_SIZE"]) || 4);
/** Output buffer of a deflater: a 1 MB slice of JSON compresses to some 40 KB, so one pass takes it whole. */
const DEFLATE_CHUNK = 256 * 1024;

function takeDeflater(): Promise<DeflateRaw> {
  const free = idle.pop();
  if (free !== undefined) return Promise.resolve(free);
  if (made < MAX_DEFLATERS) {
    made++;
    const deflater = createDeflateRaw({
      level: 1,
      flush: constants.Z_SYNC_FLUSH,
      chunkSize: DEFLATE_CHUNK,
    });
    // A failure reaches the write's callback; the event would otherwise end the process.
    deflater.on("error", () => {});
    return Promise.resolve(deflater);
  }
  return new Promise((resolve) => waiting.push(resolve));
}

function giveBack(deflater: DeflateRaw): void {
  deflater.reset();
  const next = waiting.shift();
  if (next === undefined) idle.push(deflater);
  else next(deflater);
}

function deflatePiece(deflater: DeflateRaw, part: Uint8Array): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = [];
    const onData = (chunk: Buffer): void => void out.push(chunk);
    deflater.on("data", onData);
    // Written with the sync flush (the compressor's default flush): the callback comes once the piece's output has been pushed.
    deflater.write(part, (error) => {
      deflater.off("data", onData);
      if (error !== undefined && error !== null) {
        // A compressor that failed is not used again; one waiting gets a new one.
        made--;
        deflater.destroy();
        const next = waiting.shift();
        if (next !== undefined) void takeDeflater().then(next);
        reject(error);
        return;
      }
      giveBack(deflater);
      resolve(out.length === 1 ? out[0]! : Buffer.concat(out));
    });
  });
}

async function brotliParts(
  parts: Iterable<Uint8Array>,
  release: (part: Uint8Array) => void,
): Promise<Uint8Array[]> {
  const compressor = createBrotliCompress({
    params: { [constants.BROTLI_PARAM_QUALITY]: 1 },
    chunkSize: 256 * 1024,
  });
  const out: Uint8Array[] = [];
  compressor.on("data", (chunk: Buffer) => out.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    compressor.once("end", resolve);
    compressor.once("error", reject);
  });
  try {
    for (const part of parts) {
      compressor.write(part, () => release(part));
      // A turn of the event loop: the pool's finished work is taken in and the part written starts while the next is made.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  } catch (error) {
    compressor.destroy();
    throw error;
  }
  compressor.end();
  await ended;
  return out;
}
