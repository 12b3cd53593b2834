/**
 * Structured logs without a dependency: levelled lines as JSON (for
 * collectors) or readable text (at a terminal), one line for a backend's
 * outage and one for its recovery, and progress reports for long work. The
 * logger takes where lines go and the clock, so it stays pure.
 * @module
 */
export { count } from "./count.ts";
export { createLogger, LOG_LEVELS } from "./logger.ts";
export type { LogFields, LogFormat, Logger, LoggerOptions, LogLevel, LogRecord } from "./logger.ts";
export { formatRecord } from "./format_record.ts";
export { OutageLog } from "./outage_log.ts";
export type { OutageLogTarget } from "./outage_log.ts";
export { Progress } from "./progress.ts";
export type { ProgressOptions, ProgressState } from "./progress.ts";
export { LOG_SETTINGS } from "./settings.ts";
export type { LogConfig } from "./settings.ts";
