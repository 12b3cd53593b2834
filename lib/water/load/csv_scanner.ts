import { CsvSyntaxError } from "../errors.ts";

const COMMA = 0x2c;
const QUOTE = 0x22;
const LF = 0x0a;
const CR = 0x0d;

/** Bytes that end or break an unquoted field: comma, quote, CR, LF. */
const SPECIAL = new Uint8Array(256);
SPECIAL[COMMA] = 1;
SPECIAL[QUOTE] = 1;
SPECIAL[LF] = 1;
SPECIAL[CR] = 1;

/** How a scanned field was written. */
export const FIELD_PLAIN = 0;
/** A quoted field without doubled quotes inside: its bytes need no unescaping. */
export const FIELD_QUOTED = 1;
/** A quoted field with `""` inside: unescape before use. */
export const FIELD_ESCAPED = 2;

/** Options of {@linkcode CsvScanner}. */
export interface CsvScannerOptions {
  /**
   * Most fields a record may have.
   * @default {512}
   */
  maxFields?: number;
}

/**
 * A byte-level RFC 4180 record scanner. It finds the field boundaries of one
 * record at a time without creating strings, so that a loader can hash or
 * parse field bytes directly. It accepts quoted fields with embedded commas,
 * doubled quotes and line breaks, and CRLF, LF or CR line ends.
 * @example
 * ```ts
 * const scanner = new CsvScanner();
 * const bytes = new TextEncoder().encode('a,"b,c"\r\n');
 * const next = scanner.scan(bytes, 0, bytes.length, true); // 9; scanner.count === 2
 * ```
 */
export class CsvScanner {
  /** Start offset of each field of the last record. */
  readonly starts: Int32Array;
  /** End offset (exclusive) of each field of the last record. */
  readonly ends: Int32Array;
  /** {@linkcode FIELD_PLAIN}, {@linkcode FIELD_QUOTED} or {@linkcode FIELD_ESCAPED} per field. */
  readonly kinds: Uint8Array;
  /** Number of fields in the last record. */
  count = 0;
  /** Line breaks the last record spanned, its terminator included. */
  lineBreaks = 0;
  /** Line of the record being scanned, for error messages; the caller keeps it current. */
  line = 1;
  readonly #maxFields: number;

  /**
   * Creates a scanner.
   * @param options field limit
   */
  constructor(options: CsvScannerOptions = {}) {
    this.#maxFields = options.maxFields ?? 512;
    this.starts = new Int32Array(this.#maxFields);
    this.ends = new Int32Array(this.#maxFields);
    this.kinds = new Uint8Array(this.#maxFields);
  }

  /**
   * Scans one record starting at `pos`.
   * @param buf the bytes
   * @param pos where the record starts
   * @param limit end of the valid bytes
   * @param final whether no more bytes will follow `limit`
   * @returns the offset after the record's line end, or -1 when the record
   * continues past `limit` and `final` is false
   * @throws {CsvSyntaxError} on an unclosed quote, a quote inside an unquoted
   * field, text after a closing quote, or too many fields
   */
  scan(buf: Uint8Array, pos: number, limit: number, final: boolean): number {
    const starts = this.starts;
    const ends = this.ends;
    const kinds = this.kinds;
    let i = pos;
    let f = 0;
    let breaks = 0;
    for (;;) {
      if (f >= this.#maxFields) {
        throw new CsvSyntaxError(`found more than ${this.#maxFields} fields`, this.line, f + 1, i);
      }
      let c: number;
      if (i < limit && buf[i] === QUOTE) {
        const open = i;
        i++;
        const start = i;
        let escaped = false;
        for (;;) {
          if (i >= limit) {
            if (!final) return -1;
            throw new CsvSyntaxError(
              "found a quoted field that is never closed",
              this.line,
              f + 1,
              open,
            );
          }
          c = buf[i]!;
          if (c === QUOTE) {
            if (i + 1 >= limit && !final) return -1;
            if (buf[i + 1] === QUOTE) {
              escaped = true;
              i += 2;
              continue;
            }
            break;
          }
          if (c === LF) breaks++;
          i++;
        }
        starts[f] = start;
        ends[f] = i;
        kinds[f] = escaped ? FIELD_ESCAPED : FIELD_QUOTED;
        i++;
        f++;
        if (i >= limit) {
          if (!final) return -1;
          break;
        }
        c = buf[i]!;
        if (c !== COMMA && c !== LF && c !== CR) {
          throw new CsvSyntaxError(
            "found text after a closing quote; double a quote inside a quoted field",
            this.line,
            f,
            i,
          );
        }
      } else {
        const start = i;
        while (i < limit && SPECIAL[buf[i]!] === 0) i++;
        if (i < limit && buf[i] === QUOTE) {
          throw new CsvSyntaxError(
            "found a quote inside an unquoted field; quote the whole field",
            this.line,
            f + 1,
            i,
          );
        }
        if (i >= limit && !final) return -1;
        starts[f] = start;
        ends[f] = i;
        kinds[f] = FIELD_PLAIN;
        f++;
        if (i >= limit) break;
        c = buf[i]!;
      }
      if (c === COMMA) {
        i++;
        continue;
      }
      // A line end: LF, CR or CRLF.
      i++;
      if (c === CR) {
        if (i >= limit && !final) return -1;
        if (i < limit && buf[i] === LF) i++;
      }
      breaks++;
      break;
    }
    this.count = f;
    this.lineBreaks = breaks;
    return i;
  }
}

/**
 * Copies the bytes of an {@linkcode FIELD_ESCAPED} field with each `""` made `"`.
 * @param buf the bytes
 * @param start field start
 * @param end field end
 * @param out where to write (at least `end - start` bytes)
 * @returns the unescaped length
 */
export function unescapeField(
  buf: Uint8Array,
  start: number,
  end: number,
  out: Uint8Array,
): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = buf[i]!;
    out[n++] = c;
    if (c === QUOTE) i++;
  }
  return n;
}
