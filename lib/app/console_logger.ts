import { createLogger, type LogConfig, type Logger } from "../log/mod.ts";
import type { ServiceLog } from "../http/mod.ts";

/** Where a console logger writes: a stream that may be a terminal. */
export interface LogStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/**
 * The server's logger: info and debug lines on standard output, warnings and
 * errors on standard error (what a terminal or a container keeps apart),
 * readable on a terminal and JSON otherwise (`LOG_FORMAT=auto`), from
 * `LOG_LEVEL` on.
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
  // The level is the line's own: the formatter writes it first, as `{"level":"error"` or `<time> ERROR`.
  const severe = format === "json" ? /^\{"level":"(?:warn|error)"/ : /^\S+ (?:WARN|ERROR) /;
  return createLogger({
    write: (line) => (severe.test(line) ? streams.err : streams.out).write(`${line}\n`),
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
