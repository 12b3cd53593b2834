import type { AnsweredBy, ResponseEntry } from "../http/mod.ts";
import {
  type EncodedFields,
  encodeJsonNumber,
  encodeJsonString,
  encodeThousandths,
} from "../log/mod.ts";

// The access log's line, written into the log's buffer from one record kept
// for every request: the parts that depend only on the route, the method and
// the status are encoded once and copied; the rest is written digit by digit.

const encoder = new TextEncoder();
/** The record of a response without a request (its target could not be read): no route, service or client. */
const NOBODY: AnsweredBy = { service: "", route: "other" };
/** Parts kept at most, across routes, methods and statuses (a client chooses the method). */
const MAX_PARTS = 4096;
/** The longest method whose parts are kept: the registered methods are far shorter. */
const MAX_KEPT_METHOD = 24;

/** The bytes of an access line that depend only on its route, method and status. */
interface Parts {
  /** `"<msg>","event":"request","method":…,"route":…,"status":…,"durationMs":` */
  readonly head: Uint8Array;
  /** `,"service":…` , or nothing without a request. */
  readonly service: Uint8Array;
}

const BYTES = encoder.encode(',"bytes":');
const REQUEST_ID = encoder.encode(',"requestId":');
const CLIENT = encoder.encode(',"client":');
const ABORTED = encoder.encode(',"aborted":true}');

/**
 * The access line of one response at a time: set it with
 * {@linkcode AccessLine.set} and hand it to the log's encoded writer, which
 * writes it before the next `set`. Its bytes are the JSON format's line for
 * the fields `event`, `method`, `route`, `status`, `durationMs`, `bytes`,
 * `requestId`, `service`, `client` and `aborted`, in that order.
 */
export class AccessLine implements EncodedFields {
  readonly #parts = new Map<AnsweredBy, Map<string, Map<number, Parts>>>();
  #count = 0;
  #current: Parts = { head: new Uint8Array(0), service: new Uint8Array(0) };
  /** The duration in thousandths of a millisecond, a whole number (a small integer, never a heap number). */
  #durationThousandths = 0;
  #bytes = 0;
  #requestId: string | undefined = undefined;
  #client: string | undefined = undefined;
  #aborted = false;

  /**
   * Takes the fields of a response.
   * @param entry the response
   * @param by who answered it, when known
   */
  set(entry: ResponseEntry, by: AnsweredBy | undefined): void {
    this.#current = this.#partsOf(by ?? NOBODY, entry.method, entry.status, entry.request);
    this.#durationThousandths = Math.round(entry.durationMs * 1000);
    this.#bytes = entry.bytes;
    this.#requestId = entry.requestId;
    this.#client = entry.request?.remoteAddress;
    this.#aborted = entry.aborted;
  }

  maxBytes(): number {
    return this.#current.head.length + 24 + BYTES.length + 24 +
      (this.#requestId === undefined ? 0 : REQUEST_ID.length + this.#requestId.length * 6 + 2) +
      this.#current.service.length +
      (this.#client === undefined ? 0 : CLIENT.length + this.#client.length * 6 + 2) +
      ABORTED.length;
  }

  encode(into: Uint8Array, at: number): number {
    const parts = this.#current;
    into.set(parts.head, at);
    at = encodeThousandths(this.#durationThousandths, into, at + parts.head.length);
    into.set(BYTES, at);
    at = encodeJsonNumber(this.#bytes, into, at + BYTES.length);
    if (this.#requestId !== undefined) {
      into.set(REQUEST_ID, at);
      at = encodeJsonString(this.#requestId, into, at + REQUEST_ID.length);
    }
    into.set(parts.service, at);
    at += parts.service.length;
    if (this.#client !== undefined) {
      into.set(CLIENT, at);
      at = encodeJsonString(this.#client, into, at + CLIENT.length);
    }
    if (this.#aborted) {
      into.set(ABORTED, at);
      return at + ABORTED.length;
    }
    into[at] = 0x7d;
    return at + 1;
  }

  #partsOf(by: AnsweredBy, method: string, status: number, request: unknown): Parts {
    const known = this.#parts.get(by)?.get(method)?.get(status);
    if (known !== undefined) return known;
    const route = by.route;
    // A status that is not a finite number (only a direct caller can give one) is null, as JSON has it.
    const shown = Number.isFinite(status) ? String(status) : "null";
    const head = `${JSON.stringify(`${method} ${route} ${status}`)},"event":"request","method":${
      JSON.stringify(method)
    },"route":${JSON.stringify(route)},"status":${shown},"durationMs":`;
    const parts: Parts = {
      head: encoder.encode(head),
      // A request the record names has a service (the host's own routes are "host"); a response without one has none.
      service: request === undefined || by === NOBODY
        ? new Uint8Array(0)
        : encoder.encode(`,"service":${JSON.stringify(by.service)}`),
    };
    // A client chooses the method (HTTP/2 takes any token, thousands of characters long): only
    // the short ones, the methods there are, are kept.
    if (method.length > MAX_KEPT_METHOD) return parts;
    if (this.#count >= MAX_PARTS) {
      this.#parts.clear();
      this.#count = 0;
    }
    let byMethod = this.#parts.get(by);
    if (byMethod === undefined) this.#parts.set(by, byMethod = new Map());
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, byStatus = new Map());
    byStatus.set(status, parts);
    this.#count++;
    return parts;
  }
}
