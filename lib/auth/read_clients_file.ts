import { ConfigError } from "../config/mod.ts";
import { parseConfigJson } from "../config/_internal.ts";
import { type Client, parseClients } from "./clients.ts";

/**
 * Reads the registered OAuth clients file: a JSON array of
 * `{"client_id", "client_secret"?, "grant_types", "scopes"}`.
 * @param text the file's text
 * @param file the file's path, for messages
 * @returns the clients, and the plain secrets by client id (to print for a demo)
 * @throws {ConfigError} naming CLIENTS_FILE and the entry at fault
 */
export function readClientsFile(
  text: string,
  file: string,
): { clients: Client[]; plain: Map<string, string> } {
  const parsed = parseConfigJson(text, file, "CLIENTS_FILE");
  let clients: Client[];
  try {
    clients = parseClients(parsed);
  } catch (error) {
    throw new ConfigError("CLIENTS_FILE", `Cannot start: ${file}: ${(error as Error).message}`);
  }
  const plain = new Map<string, string>();
  for (const entry of parsed as Record<string, unknown>[]) {
    const secret = entry["client_secret"];
    if (typeof secret === "string" && !secret.trim().startsWith("sha256:")) {
      plain.set(String(entry["client_id"]), secret);
    }
  }
  return { clients, plain };
}
