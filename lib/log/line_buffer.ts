import { isoSecondPrefix, lastIsoSecond } from "./format_record.ts";
import type { LogLevel } from "./log_record.ts";

// Lines as UTF-8 bytes in a buffer that outlives them: a line written a
// request (the access log) is encoded straight into it, so that it allocates
// no string, no field object and no record. Pure: the console logger hands
// what is taken to its stream.

/**
 * A line's message and fields that write themselves into bytes as JSON: a
 * preallocated record whose fields are set again for each line (what the
 * access log keeps), never copied into a fields object.
 */
export interface EncodedFields {
  /** At most how many bytes {@linkcode EncodedFields.encode} writes. */
  maxBytes(): number;
  /**
   * Writes the message and the fields, `"<msg>","<name>":<value>,...`, as
   * the JSON format writes them (after `"msg":`, before the closing brace).
   * @param into the buffer, with room for `maxBytes()` from `at`
   * @param at where to start
   * @returns where it stopped
   */
  encode(into: Uint8Array, at: number): number;
}

const encoder = new TextEncoder();
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const ZERO = 0x30;

/**
 * Writes a string as JSON, as `JSON.stringify` writes it. Printable ASCII,
 * the usual case, is copied unit by unit; anything else goes through
 * `JSON.stringify` and `TextEncoder`.
 * @param text the string
 * @param into the buffer, with room for `text.length * 6 + 2` bytes from `at`
 * @param at where to start
 * @returns where it stopped
 */
export function encodeJsonString(text: string, into: Uint8Array, at: number): number {
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x20 || unit > 0x7e || unit === QUOTE || unit === BACKSLASH) {
      return at + encoder.encodeInto(JSON.stringify(text), into.subarray(at)).written;
    }
  }
  into[at] = QUOTE;
  at = encodeText(text, into, at + 1);
  into[at] = QUOTE;
  return at + 1;
}

/**
 * Writes a number as JSON, as the JSON format writes it (`String(value)`,
 * `null` for what is not finite); a whole number from 0 to 2^53 digit by digit.
 * @param value the number
 * @param into the buffer, with room for 24 bytes from `at`
 * @param at where to start
 * @returns where it stopped
 */
export function encodeJsonNumber(value: number, into: Uint8Array, at: number): number {
  if (Number.isSafeInteger(value) && value >= 0) return encodeDigits(value, into, at);
  const thousandths = Math.round(value * 1000);
  return thousandths / 1000 === value && value > 0
    ? encodeThousandths(thousandths, into, at)
    : encodeText(Number.isFinite(value) ? String(value) : "null", into, at);
}

/**
 * Writes `thousandths / 1000` as JSON, as the JSON format writes that
 * number: a duration in milliseconds rounded to the microsecond, kept as a
 * whole number so that setting it allocates no heap number. Below 10^15 (15
 * significant digits at most) its text is its decimal digits.
 * @param thousandths a whole number of thousandths (else written as `String(thousandths / 1000)`)
 * @param into the buffer, with room for 24 bytes from `at`
 * @param at where to start
 * @returns where it stopped
 */
export function encodeThousandths(thousandths: number, into: Uint8Array, at: number): number {
  if (!(Number.isSafeInteger(thousandths) && thousandths >= 0 && thousandths < 1e15)) {
    const value = thousandths / 1000;
    return encodeText(Number.isFinite(value) ? String(value) : "null", into, at);
  }
  const fraction = thousandths % 1000;
  at = encodeDigits((thousandths - fraction) / 1000, into, at);
  if (fraction === 0) return at;
  into[at++] = 0x2e;
  into[at++] = ZERO + Math.floor(fraction / 100);
  const rest = fraction % 100;
  if (rest !== 0) {
    into[at++] = ZERO + Math.floor(rest / 10);
    if (rest % 10 !== 0) into[at++] = ZERO + (rest % 10);
  }
  return at;
}

/** ASCII text, unit by unit. */
function encodeText(text: string, into: Uint8Array, at: number): number {
  for (let i = 0; i < text.length; i++) into[at++] = text.charCodeAt(i);
  return at;
}

/** A whole number from 0 to 2^53, in decimal digits. */
function encodeDigits(value: number, into: Uint8Array, at: number): number {
  let digits = 1;
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++;
  let rest = value;
  for (let i = at + digits - 1; i >= at; i--) {
    into[i] = ZERO + (rest % 10);
    rest = Math.floor(rest / 10);
  }
  return at + digits;
}

/**
 * Writes a time as the JSON format writes it: ISO 8601 in UTC, to the
 * millisecond, quoted. Lines of one second share the date's text
 * (`isoSecondPrefix`, as the text lines do).
 * @param time epoch milliseconds
 * @param into the buffer, with room for 32 bytes from `at`
 * @param at where to start
 * @returns where it stopped
 * @throws {RangeError} for a time a Date cannot hold, as `toISOString` does
 */
export function encodeIsoTime(time: number, into: Uint8Array, at: number): number {
  const whole = Math.trunc(time);
  const second = Math.floor(whole / 1000);
  // The second's text is looked up only when the second changes (lastIsoSecond says why).
  if (second !== lastIsoSecond.second && isoSecondPrefix(whole) === undefined) {
    return encodeJsonString(new Date(whole).toISOString(), into, at);
  }
  into[at++] = QUOTE;
  at = encodeText(lastIsoSecond.prefix, into, at);
  const ms = whole - second * 1000;
  into[at++] = ZERO + Math.floor(ms / 100);
  into[at++] = ZERO + (Math.floor(ms / 10) % 10);
  into[at++] = ZERO + (ms % 10);
  into[at++] = 0x5a;
  into[at++] = QUOTE;
  return at;
}

/** The level's part of a JSON line, `{"level":"info","time":`, as bytes. */
const LEVEL_PARTS = new Map<LogLevel, Uint8Array>(
  (["debug", "info", "warn", "error"] as const).map((
    level,
  ) => [level, encoder.encode(`{"level":"${level}","time":`)]),
);
const MSG_PART = encoder.encode(',"msg":');
/** The most bytes of a line's level, time and message name. */
const HEAD_BYTES = 24 + 34 + MSG_PART.length;

/**
 * Lines as UTF-8 bytes, each with its newline, in one buffer until they are
 * taken: text lines, and JSON lines whose fields encode themselves
 * ({@linkcode EncodedFields}). Taking hands the bytes over and starts a new
 * buffer, so a stream that writes later may keep them.
 * @example
 * ```ts
 * const lines = new LineBuffer();
 * lines.addText('{"level":"info","msg":"started"}');
 * process.stdout.write(lines.take());
 * ```
 */
export class LineBuffer {
  readonly #size: number;
  #bytes: Uint8Array;
  #used = 0;

  /**
   * @param size the bytes of a new buffer (a longer line gets a longer one)
   */
  constructor(size = 65_536) {
    this.#size = size;
    this.#bytes = new Uint8Array(size);
  }

  /** Bytes waiting. */
  get length(): number {
    return this.#used;
  }

  /**
   * Adds a line and its newline.
   * @param line the line, without a newline
   */
  addText(line: string): void {
    this.#room(line.length * 3 + 1);
    this.#used += encoder.encodeInto(line, this.#bytes.subarray(this.#used)).written;
    this.#bytes[this.#used++] = 0x0a;
  }

  /**
   * Adds a JSON line, `{"level":…,"time":…,"msg":…}` with the fields'
   * own bytes, and its newline: the line the JSON format writes for them.
   * @param level the line's level
   * @param time epoch milliseconds
   * @param fields the message and fields
   */
  addJson(level: LogLevel, time: number, fields: EncodedFields): void {
    this.#room(HEAD_BYTES + fields.maxBytes() + 1);
    const bytes = this.#bytes;
    const part = LEVEL_PARTS.get(level)!;
    bytes.set(part, this.#used);
    let at = encodeIsoTime(time, bytes, this.#used + part.length);
    bytes.set(MSG_PART, at);
    at = fields.encode(bytes, at + MSG_PART.length);
    bytes[at++] = 0x0a;
    this.#used = at;
  }

  /**
   * Takes the lines added since the last take, and starts a new buffer.
   * @returns their bytes (empty when none)
   */
  take(): Uint8Array {
    const taken = this.#bytes.subarray(0, this.#used);
    if (this.#used > 0) {
      this.#bytes = new Uint8Array(this.#size);
      this.#used = 0;
    }
    return taken;
  }

  /** Makes room for `needed` more bytes: a buffer twice as long (or more), with what it held. */
  #room(needed: number): void {
    if (this.#used + needed <= this.#bytes.length) return;
    const grown = new Uint8Array(Math.max(this.#bytes.length * 2, this.#used + needed));
    grown.set(this.#bytes.subarray(0, this.#used));
    this.#bytes = grown;
  }
}
