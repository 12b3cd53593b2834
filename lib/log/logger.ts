import { formatRecord } from "./format_record.ts";
import type { EncodedFields } from "./line_buffer.ts";
import {
  LOG_LEVELS,
  type LogFields,
  type LogFormat,
  type LogLevel,
  type LogRecord,
} from "./log_record.ts";

/**
 * Writes levelled lines. Its `info` and `error` take what a service's log
 * takes (`ServiceLog` of lib/http), so one logger serves every module.
 */
export interface Logger {
  /** Detail for finding a fault: off unless `LOG_LEVEL=debug`. */
  debug(msg: string, fields?: LogFields): void;
  /** A normal event: started, loaded, a request answered. */
  info(msg: string, fields?: LogFields): void;
  /** Something off that the process works around. */
  warn(msg: string, fields?: LogFields): void;
  /** A failure, with its error when there is one. */
  error(msg: string, error?: unknown, fields?: LogFields): void;
  /** Whether a line of this level is written (to skip building fields no one reads). */
  enabled(level: LogLevel): boolean;
  /** A logger that adds `fields` to each of its lines, e.g. `{ service: "relay" }`. */
  child(fields: LogFields): Logger;
}

/** Options of {@linkcode createLogger}. */
export interface LoggerOptions {
  /** Writes one formatted line (without its newline), e.g. to stdout; its level comes along, to choose where. */
  readonly write: (line: string, level: LogLevel) => void;
  /** The clock, in epoch milliseconds. */
  readonly now: () => number;
  /**
   * The least severe level written.
   * @default {"info"}
   */
  readonly level?: LogLevel;
  /**
   * How lines look.
   * @default {"json"}
   */
  readonly format?: LogFormat;
  /** Fields added to every line. */
  readonly fields?: LogFields;
  /**
   * Writes a JSON line whose message and fields encode themselves (into a
   * `LineBuffer`): with it, {@linkcode encodedWriter} gives the logger's
   * JSON lines a way that allocates nothing a line.
   */
  readonly writeEncoded?: (level: LogLevel, time: number, fields: EncodedFields) => void;
}

/** The slot of a logger that writes encoded lines: see {@linkcode encodedWriter}. */
const ENCODED: unique symbol = Symbol("tributary.encodedWriter");

interface WithEncoded {
  [ENCODED]?: (level: LogLevel) => ((fields: EncodedFields) => void) | undefined;
}

/**
 * How to write lines of a level whose message and fields encode themselves
 * ({@linkcode EncodedFields}), as the logger writes JSON lines but without a
 * fields object or a string: a logger made by {@linkcode createLogger} with
 * `writeEncoded`, writing JSON and without fields of its own, has one.
 * @param log the logger
 * @param level the lines' level
 * @returns the writer, or undefined when the logger has none or does not write the level
 */
export function encodedWriter(
  log: Logger,
  level: LogLevel,
): ((fields: EncodedFields) => void) | undefined {
  return (log as WithEncoded)[ENCODED]?.(level);
}

/**
 * Creates a logger that formats each line and hands it to `write`: no
 * buffering, no dependency, no console. Fields whose names say they hold a
 * secret (authorization, password, secret, token, key) are written as
 * `[redacted]`, so that a careless field cannot leak one.
 * @param options where lines go, the clock, the level and the format
 * @returns the logger
 * @example
 * ```ts
 * const log = createLogger({ write: (line) => process.stdout.write(`${line}\n`), now: Date.now });
 * log.child({ service: "sync" }).info("Sync: queued work resumed", { owners: 3 });
 * // {"level":"info","time":"2026-11-24T22:30:01.123Z","msg":"Sync: queued work resumed","service":"sync","owners":3}
 * ```
 */
export function createLogger(options: LoggerOptions): Logger {
  const least = LOG_LEVELS.indexOf(options.level ?? "info");
  if (least === -1) {
    throw new RangeError(`Cannot create a logger: level must be one of ${LOG_LEVELS.join(", ")}`);
  }
  const format = options.format ?? "json";
  const { write, now } = options;
  const make = (base: LogFields): Logger => {
    // The root logger's lines (the access log's among them) take their fields as given, without a copy.
    const noBase = Object.keys(base).length === 0;
    const emit = (
      level: LogLevel,
      msg: string,
      fields: LogFields | undefined,
      error?: unknown,
    ): void => {
      if (LOG_LEVELS.indexOf(level) < least) return;
      const all = fields === undefined ? base : noBase ? fields : { ...base, ...fields };
      const record: LogRecord = error === undefined
        ? { level, time: now(), msg, fields: all }
        : { level, time: now(), msg, fields: all, error };
      write(formatRecord(record, format, least === 0), level);
    };
    const logger: Logger & WithEncoded = {
      debug: (msg, fields) => emit("debug", msg, fields),
      info: (msg, fields) => emit("info", msg, fields),
      warn: (msg, fields) => emit("warn", msg, fields),
      error: (msg, error, fields) => emit("error", msg, fields, error),
      enabled: (level) => LOG_LEVELS.indexOf(level) >= least,
      child: (fields) => make({ ...base, ...fields }),
    };
    // Only where a line is the level, the time and the fields alone: JSON, without fields of the logger's own.
    const writeEncoded = options.writeEncoded;
    if (writeEncoded !== undefined && format === "json" && noBase) {
      logger[ENCODED] = (level) =>
        LOG_LEVELS.indexOf(level) < least
          ? undefined
          : (fields) => writeEncoded(level, now(), fields);
    }
    return logger;
  };
  return make(options.fields ?? {});
}
