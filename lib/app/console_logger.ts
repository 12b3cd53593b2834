import { writeSync } from "node:fs";
import { createLogger, type LogConfig, type Logger } from "../log/mod.ts";
import type { ServiceLog } from "../http/mod.ts";

/** Where a console logger writes: a stream that may be a terminal. */
export interface LogStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  /** Its file descriptor, for the lines still waiting when the process exits. */
  readonly fd?: number;
}

/** Above this many characters waiting, lines are written at once rather than at the end of the turn. */
const FLUSH_ABOVE = 1 << 20;

/** Writers with lines waiting, written synchronously if the process exits first. */
const waiting = new Set<() => void>();
let exitHooked = false;

/**
 * Lines to a stream, written together at the end of the event loop's turn:
 * one write for a burst of access lines instead of one each (a write to a
 * pipe costs more than formatting the line). What waits when the process
 * exits is written synchronously then.
 */
function turnWriter(stream: LogStream): (line: string) => void {
  let pending = "";
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    waiting.delete(flushAtExit);
    if (pending === "") return;
    const text = pending;
    pending = "";
    stream.write(text);
  };
  const flushAtExit = (): void => {
    if (pending === "") return;
    const text = pending;
    pending = "";
    if (stream.fd === undefined) stream.write(text);
    else {
      try {
        writeSync(stream.fd, text);
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
  return (line) => {
    pending += `${line}\n`;
    if (pending.length > FLUSH_ABOVE) return flush();
    if (scheduled) return;
    scheduled = true;
    waiting.add(flushAtExit);
    setImmediate(flush);
  };
}

/**
 * The server's logger: info and debug lines on standard output, warnings and
 * errors on standard error (what a terminal or a container keeps apart),
 * readable on a terminal and JSON otherwise (`LOG_FORMAT=auto`), from
 * `LOG_LEVEL` on. The lines of one turn of the event loop are written
 * together, at its end (or at exit).
 * @param config `LOG_LEVEL` and `LOG_FORMAT`, as read
 * @param streams where lines go
 * @returns the logger
 */
export function createConsoleLogger(
  config: Pick<LogConfig, "level" | "format">,
  streams: { readonly out: LogStream; readonly err: LogStream } = { out: process.stdout, err: process.stderr },
): Logger {
  const tty = streams.out.isTTY === true && streams.err.isTTY === true;
  const format = config.format === "auto" ? (tty ? "pretty" : "json") : config.format;
  const out = turnWriter(streams.out);
  const err = turnWriter(streams.err);
  return createLogger({
    write: (line, level) => (level === "warn" || level === "error" ? err : out)(line),
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
    fields === undefined || Object.keys(fields).length === 0 ? msg : `${msg} ${JSON.stringify(fields)}`;
  const make = (base: Readonly<Record<string, unknown>>): Logger => ({
    debug: () => {},
    info: (msg, fields) => log.info(text(msg, { ...base, ...fields })),
    warn: (msg, fields) => log.info(text(msg, { ...base, ...fields })),
    error: (msg, error, fields) => log.error(text(msg, Object.keys(base).length === 0 && fields === undefined ? undefined : { ...base, ...fields }), error),
    enabled: (level) => level !== "debug",
    child: (fields) => make({ ...base, ...fields }),
  });
  return make({});
}
