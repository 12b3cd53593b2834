import { parseApiKey } from "../http/mod.ts";
import { usage } from "./_input.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec } from "./types.ts";

/**
 * `key hash [key]`: the form of an API key that configuration files and
 * `API_KEYS` hold in place of the key, `sha256:<64 hex digits>`, made by the
 * same function the server reads keys with (the key trimmed, then SHA-256).
 */
export const KEY_HASH: CommandSpec = {
  path: ["key", "hash"],
  summary: "Print the sha256:<hex> form of an API key, to store in place of the key",
  details: [
    "The key comes from standard input (one key; a trailing newline is ignored) or, less privately, as the argument.",
    'The form goes into API_KEYS, API_KEYS_FILE ("key") or TENANTS_FILE ("api_keys"); the server hashes what clients send and compares.',
  ],
  positionals: [{
    name: "key",
    optional: true,
    doc:
      "the key; read from standard input when absent (keeps it out of the shell history and the process list)",
  }],
  options: {},
  settings: [],
  examples: ["key hash < key.txt", "key hash --json my-secret-key"],
  run: hashKey,
};

async function hashKey(input: CommandInput, io: CliIo): Promise<CommandResult> {
  let key = input.positionals[0];
  if (key === undefined) {
    const piped = await io.stdin();
    if (piped === undefined) {
      throw usage(KEY_HASH, "give the key on standard input (e.g. < key.txt) or as the argument");
    }
    const lines = piped.split(/\r?\n/).filter((line) => line.trim() !== "");
    if (lines.length > 1) {
      throw usage(KEY_HASH, `standard input holds ${lines.length} lines: give one key at a time`);
    }
    key = lines[0] ?? "";
  }
  if (key.trim().startsWith("sha256:")) {
    throw usage(KEY_HASH, "the key is already in its sha256: form");
  }
  let hash: string;
  try {
    hash = parseApiKey("key", key).hash;
  } catch (error) {
    throw usage(KEY_HASH, "the key is empty", error);
  }
  return { exitCode: 0, json: { hash: `sha256:${hash}` }, lines: [`sha256:${hash}`] };
}
