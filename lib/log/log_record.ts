// The shape of a log line, apart from the logger that writes it and the
// formatter that renders it (which both need it).

/** Levels, least severe first: a logger writes its level and those after it. */
export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** How much a logger writes: `debug` everything, `error` only failures. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** How lines look: a JSON object a line (for collectors) or a readable line (for people at a terminal). */
export type LogFormat = "json" | "pretty";

/** Fields of a line besides its level, time and message, e.g. `{ status: 200 }`. */
export type LogFields = Readonly<Record<string, unknown>>;

/** One line to write, before formatting. */
export interface LogRecord {
  readonly level: LogLevel;
  /** Epoch milliseconds. */
  readonly time: number;
  readonly msg: string;
  readonly fields: LogFields;
  /** The failure a line reports, if any. */
  readonly error?: unknown;
}
