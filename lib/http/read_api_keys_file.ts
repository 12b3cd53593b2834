import { ConfigError } from "../config/mod.ts";
import { parseConfigJson } from "../config/_internal.ts";
import { type ApiKey, parseApiKey } from "./api_keys.ts";

/**
 * Reads an API keys file: `{"api_keys": [{"name": "...", "key": "..."}]}`,
 * each key plain or `sha256:<64 hex digits>`.
 * @param text the file's text
 * @param file the file's path, for messages
 * @returns the keys, and the plain ones by name (to print for a demo)
 * @throws {ConfigError} naming API_KEYS_FILE, the file and the entry at fault
 */
export function readApiKeysFile(
  text: string,
  file: string,
): { keys: ApiKey[]; plain: Map<string, string> } {
  const parsed = parseConfigJson(text, file, "API_KEYS_FILE");
  const entries = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)["api_keys"]
    : undefined;
  if (!Array.isArray(entries)) {
    throw new ConfigError(
      "API_KEYS_FILE",
      `Cannot start: ${file} must hold {"api_keys": [{"name", "key"}, ...]}`,
    );
  }
  const keys: ApiKey[] = [];
  const plain = new Map<string, string>();
  entries.forEach((entry: unknown, i) => {
    const record = typeof entry === "object" && entry !== null
      ? (entry as Record<string, unknown>)
      : {};
    const name = record["name"];
    const key = record["key"];
    if (typeof name !== "string" || name === "" || typeof key !== "string") {
      throw new ConfigError(
        "API_KEYS_FILE",
        `Cannot start: ${file} entry ${i + 1} needs a "name" and a "key" string`,
      );
    }
    try {
      keys.push(parseApiKey(name, key));
    } catch (error) {
      throw new ConfigError(
        "API_KEYS_FILE",
        `Cannot start: ${file} entry ${i + 1}: ${(error as Error).message}`,
      );
    }
    if (!key.trim().startsWith("sha256:")) plain.set(name, key);
  });
  return { keys, plain };
}
