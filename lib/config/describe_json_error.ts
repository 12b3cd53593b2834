import { jsonErrorPosition } from "./json_error_position.ts";

/** V8's "… in JSON at position 12". */
const POSITION = / in JSON at position (\d+)(?: \(line \d+ column \d+\))?$/;
/** V8's quote of the text around a fault: `, "…" is not valid JSON` (with `...` where it is cut). */
const QUOTE = /, (?:\.\.\.)?".*"(?:\.\.\.)? is not valid JSON$/s;
/** The faulty character V8 names, when it is punctuation (a letter or digit may be part of a secret). */
const TOKEN = /^Unexpected token '(.)'/s;

/**
 * Says why and where a text is not JSON, as `JSON.parse` found it, without
 * quoting the text: V8's messages quote up to ten characters either side of
 * the fault, which in a file of keys or client secrets is part of a secret.
 * @param text the text `JSON.parse` refused
 * @param error what it threw
 * @returns e.g. `Unexpected token ']' at line 3, column 14`
 * @example
 * ```ts
 * describeJsonError('{"key": s3cret}', new SyntaxError("…")); // "Unexpected character at line 1, column 9"
 * ```
 */
export function describeJsonError(text: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  let what = message.replace(POSITION, "").replace(QUOTE, "");
  const token = TOKEN.exec(what);
  if (token !== null) {
    what = /[\p{L}\p{N}_-]/u.test(token[1]!)
      ? "Unexpected character"
      : `Unexpected token '${token[1]}'`;
  }
  const offset = jsonErrorPosition(text);
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - before.lastIndexOf("\n");
  return `${what} at line ${line}, column ${column}`;
}
