import { describeJsonError } from "./describe_json_error.ts";
import { ConfigError } from "./errors.ts";

/**
 * Parses the JSON of a file that a setting names.
 * @param text the file's text
 * @param file the file's path, for the message
 * @param variable the variable that names the file
 * @returns the parsed value
 * @throws {ConfigError} naming the variable and the file, and where the text stops being JSON (never quoting it: it may hold secrets)
 */
export function parseConfigJson(text: string, file: string, variable: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ConfigError(
      variable,
      `Cannot start: ${file} is not valid JSON: ${describeJsonError(text, error)}`,
    );
  }
}
