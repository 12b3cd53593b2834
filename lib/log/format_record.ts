import type { LogFields, LogFormat, LogRecord } from "./log_record.ts";

/** Field names whose values are never written: they may hold a credential. */
const SECRET = /authorization|cookie|password|secret|token|api[-_]?key|^key$/i;

/**
 * Formats one log line: a JSON object with `level`, `time` (ISO 8601),
 * `msg`, the fields and `err` (its name, message and `code`; its stack only
 * with `withStack`), or a readable line `time LEVEL msg key=value ...`.
 * Fields named like a secret are `[redacted]`; values that JSON cannot hold
 * (bigints, cycles) are written as text. Never throws.
 * @param record the line
 * @param format json or pretty
 * @param withStack whether an error's stack is written (at the debug level)
 * @returns the line, without a newline
 */
export function formatRecord(record: LogRecord, format: LogFormat, withStack = false): string {
  const err = record.error === undefined ? undefined : describe(record.error, withStack);
  const time = isoTime(record.time);
  if (format === "json") {
    // Written straight as text (the hot path: an access line a request), in the order an object would keep.
    let line = `{"level":"${record.level}","time":"${time}","msg":${quote(record.msg)}`;
    const fields = record.fields;
    for (const name in fields) {
      const value = fields[name];
      if (value === undefined || (name === "err" && err !== undefined)) continue;
      const key = keyOf(name);
      if (key === RESERVED) continue;
      line += key.secret ? key.redacted : key.start + json(value);
    }
    if (err !== undefined) line += `,"err":${JSON.stringify(err)}`;
    return `${line}}`;
  }
  const fields = cleanFields(record.fields);
  let line = `${time} ${record.level.toUpperCase().padEnd(5)} ${record.msg}`;
  if (err !== undefined) {
    line += `: ${err["message"]}${err["code"] === undefined ? "" : ` (${String(err["code"])})`}`;
  }
  for (const [name, value] of Object.entries(fields)) line += ` ${name}=${pretty(value)}`;
  if (err?.["stack"] !== undefined) line += `\n${String(err["stack"])}`;
  return line;
}

/**
 * The second of the last time formatted and its text up to the milliseconds
 * (`2026-11-24T22:30:01.`): lines of one second share it. A caller on a hot
 * path compares `second` itself before calling {@linkcode isoSecondPrefix}, so
 * that a line of the same second makes no call with the time (a call may box
 * a number that large on the heap).
 */
export const lastIsoSecond = { second: Number.NaN, prefix: "" };

/**
 * A time's ISO 8601 text up to its milliseconds (`2026-11-24T22:30:01.`),
 * kept for the second last asked (the JSON lines' times, as text or as bytes,
 * share it); undefined for a year past 9999, whose text is longer.
 * @param whole epoch milliseconds, a whole number
 * @returns the text before the milliseconds, or undefined
 * @throws {RangeError} for a time a Date cannot hold, as `toISOString` does
 */
export function isoSecondPrefix(whole: number): string | undefined {
  const second = Math.floor(whole / 1000);
  if (second !== lastIsoSecond.second) {
    const iso = new Date(whole).toISOString();
    if (iso.length !== 24) return undefined;
    lastIsoSecond.second = second;
    lastIsoSecond.prefix = iso.slice(0, 20);
  }
  return lastIsoSecond.prefix;
}

function isoTime(time: number): string {
  // As Date takes it: whole milliseconds, toward zero.
  const whole = Math.trunc(time);
  const prefix = isoSecondPrefix(whole);
  if (prefix === undefined) return new Date(whole).toISOString();
  const ms = whole - Math.floor(whole / 1000) * 1000;
  return `${prefix}${ms < 10 ? "00" : ms < 100 ? "0" : ""}${ms}Z`;
}

/** How a field's name starts its part of a JSON line. */
interface FieldKey {
  /** `,"name":`, the value to follow. */
  readonly start: string;
  /** Whether the name says it may hold a credential. */
  readonly secret: boolean;
  /** `,"name":"[redacted]"`, the whole part for a secret. */
  readonly redacted: string;
}

/** Names a line's own parts take: fields of these names are not written. */
const RESERVED: FieldKey = { start: "", secret: false, redacted: "" };

/** Each field name's key, remembered by name (a logger's names are few). */
const keys = new Map<string, FieldKey>([["level", RESERVED], ["time", RESERVED], [
  "msg",
  RESERVED,
]]);

function keyOf(name: string): FieldKey {
  let key = keys.get(name);
  if (key === undefined) {
    const start = `,${JSON.stringify(name)}:`;
    key = { start, secret: SECRET.test(name), redacted: `${start}"[redacted]"` };
    if (keys.size < 10_000) keys.set(name, key);
  }
  return key;
}

function secret(name: string): boolean {
  return keyOf(name).secret;
}

/** Characters JSON.stringify may write otherwise than as they are: quotes, backslashes, controls, surrogates (it escapes lone ones). */
// deno-lint-ignore no-control-regex -- the control characters are what JSON must escape
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A string as JSON, as JSON.stringify writes it; most need no escape, and are quoted without its work. */
function quote(text: string): string {
  return ESCAPED.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** A value as JSON: what JSON cannot hold (bigints, cycles) as text. */
function json(value: unknown): string {
  switch (typeof value) {
    case "string":
      return quote(value);
    case "number":
      return Number.isFinite(value) ? String(value) : "null";
    case "boolean":
      return value ? "true" : "false";
    default:
      return JSON.stringify(plain(value)) ?? "null";
  }
}

function cleanFields(fields: LogFields): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    out[name] = secret(name) ? "[redacted]" : plain(value);
  }
  return out;
}

/** A value JSON can write: bigints as text, anything that cannot be written (a cycle) as its string. */
function plain(value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value === null || typeof value !== "object") return value;
  try {
    JSON.stringify(value);
    return value;
  } catch {
    return String(value);
  }
}

function describe(error: unknown, withStack: boolean): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const out: Record<string, unknown> = { name: error.name, message: error.message };
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") out["code"] = code;
  // An AggregateError (a connection refused on every address) says nothing itself: its first error does.
  if (error.message === "" && error instanceof AggregateError && error.errors.length > 0) {
    return { ...describe(error.errors[0], withStack), name: error.name };
  }
  if (withStack && error.stack !== undefined) out["stack"] = error.stack;
  return out;
}

function pretty(value: unknown): string {
  if (typeof value === "string") return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return typeof value === "object" && value !== null ? JSON.stringify(value) : String(value);
}
