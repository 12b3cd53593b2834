import { choiceSetting, type ConfigOf } from "../config/mod.ts";
import { LOG_LEVELS } from "./log_record.ts";

/** How the server logs: the settings of `lib/log`, read by `readSettings`. */
export const LOG_SETTINGS = {
  level: choiceSetting("LOG_LEVEL", {
    choices: LOG_LEVELS,
    default: "info",
    doc:
      "the least severe lines written: `debug` adds each failed retry of a backend and errors' stacks; `warn` drops the access log",
  }),
  format: choiceSetting("LOG_FORMAT", {
    choices: ["auto", "json", "pretty"] as const,
    default: "auto",
    doc:
      "`json`: one JSON object a line with `level`, `time` and `msg` (for a collector); `pretty`: readable lines; `auto`: readable on a terminal, JSON otherwise",
  }),
  accessLog: choiceSetting("ACCESS_LOG", {
    choices: ["on", "off"] as const,
    default: "on",
    doc:
      "a line per request at the info level: method, route pattern, status, duration, bytes, request id and client address (never the query, headers, tokens, keys or bodies)",
  }),
} as const;

/** How the server logs. */
export type LogConfig = ConfigOf<typeof LOG_SETTINGS>;
