import { writeSync } from "node:fs";
import {
  createLogger,
  type EncodedFields,
  LineBuffer,
  type LogConfig,
  type Logger,
  type LogLevel,
} from "../log/mod.ts";
import type { ServiceLog } from "../http/mod.ts";

/** Where a console logger writes: a stream that may be a terminal. */
export interface LogStream {
  /** Takes lines as UTF-8 bytes, each with its newline; it may keep the bytes (they are not reused). */
  write(bytes: Uint8Array): unknown;
  readonly isTTY?: boolean;
  /** Its file descriptor, for the lines still waiting when the process exits. */
  readonly fd?: number;
}

/** Above this many bytes waiting, lines are written at once rather than at the end of the turn. */
const FLUSH_ABOVE = 1 << 20;

/** Writers with lines waiting, written synchronously if the process exits first. */
const waiting = new Set<() => void>();
let exitHooked = false;

/** Options of {@linkcode createConsoleLogger}. */
export interface ConsoleLoggerOptions {
  /**
   * The least time between two writes to a stream while lines keep coming,
   * milliseconds: lines that come sooner wait for its end and go together.
   * A line after a quiet spell is written at the end of its turn; 0 writes at
   * the end of every turn.
   * @default {10}
   */
  readonly writeIntervalMs?: number;
  /**
   * Runs a task once after `ms`; returns a cancel function.
   * @default real timers that do not keep the process alive
   */
  readonly setTimer?: (task: () => void, ms: number) => () => void;
}

function realTimer(task: () => void, ms: number): () => void {
  const timer = setTimeout(task, ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/**
 * Lines to a stream, written together at the end of the event loop's turn,
 * and while they keep coming, at most one write each `intervalMs`: one write
 * for a burst of access lines instead of one a request or two (a write to a
 * pipe, and waking its reader, costs more than formatting several lines).
 * What waits when the process exits is written synchronously then.
 */
function turnWriter(
  stream: LogStream,
  intervalMs: number,
  setTimer: (task: () => void, ms: number) => () => void,
): TurnWriter {
  const lines = new LineBuffer();
  /** A write waits for the end of this turn. */
  let atTurnEnd = false;
  /** The last write was less than `intervalMs` ago: lines wait for its end. */
  let resting = false;
  const write = (): void => {
    if (lines.length === 0) return;
    waiting.delete(flushAtExit);
    stream.write(lines.take());
    if (intervalMs > 0 && !resting) {
      resting = true;
      setTimer(rested, intervalMs);
    }
  };
  const turnEnded = (): void => {
    atTurnEnd = false;
    if (!resting) write();
  };
  const rested = (): void => {
    resting = false;
    write();
  };
  const flushAtExit = (): void => {
    if (lines.length === 0) return;
    const bytes = lines.take();
    if (stream.fd === undefined) stream.write(bytes);
    else {
      try {
        writeSync(stream.fd, bytes);
      } catch {
        // A full or closed pipe at exit: nothing more can be done.
      }
    }
  };
  if (!exitHooked) {
    exitHooked = true;
    process.once("exit", () => {
      for (const write of waiting) write();
    });
  }
  const added = (): void => {
    if (lines.length > FLUSH_ABOVE) return write();
    if (atTurnEnd || resting) return;
    atTurnEnd = true;
    setImmediate(turnEnded);
  };
  return {
    text: (line) => {
      if (lines.length === 0) waiting.add(flushAtExit);
      lines.addText(line);
      added();
    },
    json: (level, time, fields) => {
      if (lines.length === 0) waiting.add(flushAtExit);
      lines.addJson(level, time, fields);
      added();
    },
  };
}

/** A stream's lines: text, and JSON lines whose fields encode themselves. */
interface TurnWriter {
  text(line: string): void;
  json(level: LogLevel, time: number, fields: EncodedFields): void;
}

/**
 * The server's logger: info and debug lines on standard output, warnings and
 * errors on standard error (what a terminal or a container keeps apart),
 * readable on a terminal and JSON otherwise (`LOG_FORMAT=auto`), from
 * `LOG_LEVEL` on. The lines of one turn of the event loop are written
 * together, at its end (or at exit); while lines keep coming (an access line
 * a request), at most one write each `writeIntervalMs`.
 * @param config `LOG_LEVEL` and `LOG_FORMAT`, as read
 * @param streams where lines go
 * @param options the least time between writes, and the timers
 * @returns the logger
 * @throws {RangeError} for a negative `writeIntervalMs`
 */
export function createConsoleLogger(
  config: Pick<LogConfig, "level" | "format">,
  streams: { readonly out: LogStream; readonly err: LogStream } = {
    out: process.stdout,
    err: process.stderr,
  },
  options: ConsoleLoggerOptions = {},
): Logger {
  const tty = streams.out.isTTY === true && streams.err.isTTY === true;
  const format = config.format === "auto" ? (tty ? "pretty" : "json") : config.format;
  const intervalMs = options.writeIntervalMs ?? 10;
  if (!(intervalMs >= 0)) {
    throw new RangeError(
      `Cannot create a console logger: writeIntervalMs must be 0 or more, not ${intervalMs}`,
    );
  }
  const setTimer = options.setTimer ?? realTimer;
  const out = turnWriter(streams.out, intervalMs, setTimer);
  const err = turnWriter(streams.err, intervalMs, setTimer);
  return createLogger({
    write: (line, level) => (level === "warn" || level === "error" ? err : out).text(line),
    writeEncoded: (level, time, fields) =>
      (level === "warn" || level === "error" ? err : out).json(level, time, fields),
    now: Date.now,
    level: config.level,
    format,
  });
}

/**
 * A logger over a host's plain log (`info(message)`, `error(message, error?)`):
 * fields are appended to the message as JSON, debug lines dropped, warnings
 * written as info.
 * @param log the host's log
 * @returns a logger writing to it
 */
export function loggerOver(log: ServiceLog): Logger {
  const text = (msg: string, fields: Readonly<Record<string, unknown>> | undefined): string =>
    fields === undefined || Object.keys(fields).length === 0
      ? msg
      : `${msg} ${JSON.stringify(fields)}`;
  const make = (base: Readonly<Record<string, unknown>>): Logger => ({
    debug: () => {},
    info: (msg, fields) => log.info(text(msg, { ...base, ...fields })),
    warn: (msg, fields) => log.info(text(msg, { ...base, ...fields })),
    error: (msg, error, fields) =>
      log.error(
        text(
          msg,
          Object.keys(base).length === 0 && fields === undefined
            ? undefined
            : { ...base, ...fields },
        ),
        error,
      ),
    enabled: (level) => level !== "debug",
    child: (fields) => make({ ...base, ...fields }),
  });
  return make({});
}
