import type { LogFields, LogFormat, LogRecord } from "./logger.ts";

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
    let line = `{"level":"${record.level}","time":"${time}","msg":${JSON.stringify(record.msg)}`;
    const fields = record.fields;
    for (const name in fields) {
      const value = fields[name];
      if (value === undefined || name === "level" || name === "time" || name === "msg" || (name === "err" && err !== undefined)) continue;
      line += `,${JSON.stringify(name)}:${secret(name) ? '"[redacted]"' : json(value)}`;
    }
    if (err !== undefined) line += `,"err":${JSON.stringify(err)}`;
    return `${line}}`;
  }
  const fields = cleanFields(record.fields);
  let line = `${time} ${record.level.toUpperCase().padEnd(5)} ${record.msg}`;
  if (err !== undefined) line += `: ${err["message"]}${err["code"] === undefined ? "" : ` (${String(err["code"])})`}`;
  for (const [name, value] of Object.entries(fields)) line += ` ${name}=${pretty(value)}`;
  if (err?.["stack"] !== undefined) line += `\n${String(err["stack"])}`;
  return line;
}

/** The last time formatted: lines of one millisecond share it. */
let lastTime = Number.NaN;
let lastIso = "";

function isoTime(time: number): string {
  if (time !== lastTime) {
    lastTime = time;
    lastIso = new Date(time).toISOString();
  }
  return lastIso;
}

/** Whether a field's name says it may hold a credential, remembered by name (a logger's names are few). */
const secrets = new Map<string, boolean>();

function secret(name: string): boolean {
  let found = secrets.get(name);
  if (found === undefined) {
    found = SECRET.test(name);
    if (secrets.size < 10_000) secrets.set(name, found);
  }
  return found;
}

/** A value as JSON: what JSON cannot hold (bigints, cycles) as text. */
function json(value: unknown): string {
  switch (typeof value) {
    case "string":
      return JSON.stringify(value);
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
