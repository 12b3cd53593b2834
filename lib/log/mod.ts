/**
 * Structured logs without a dependency: levelled lines as JSON (for
 * collectors) or readable text (at a terminal), one line for a backend's
 * outage and one for its recovery, and progress reports for long work. The
 * logger takes where lines go and the clock, so it stays pure.
 * @module
 */
export { count } from "./count.ts";
export { createLogger, encodedWriter } from "./logger.ts";
export {
  type EncodedFields,
  encodeIsoTime,
  encodeJsonNumber,
  encodeJsonString,
  encodeThousandths,
  LineBuffer,
} from "./line_buffer.ts";
export type { Logger, LoggerOptions } from "./logger.ts";
export { LOG_LEVELS } from "./log_record.ts";
export type { LogFields, LogFormat, LogLevel, LogRecord } from "./log_record.ts";
export { formatRecord } from "./format_record.ts";
export { OutageLog } from "./outage_log.ts";
export type { OutageLogOptions, OutageLogTarget } from "./outage_log.ts";
export { Progress } from "./progress.ts";
export type { ProgressOptions, ProgressState } from "./progress.ts";
export { LOG_SETTINGS } from "./settings.ts";
export type { LogConfig } from "./settings.ts";
