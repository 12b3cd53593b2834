import { AUTH_SETTINGS, GRANT_TYPES, parseClients, readClientsFile } from "../auth/mod.ts";
import { SCOPES } from "../auth/_internal.ts";
import { sha256Hex } from "../crypto/mod.ts";
import { newSecret, writeConfigJson } from "./_files.ts";
import { optionFlag, optionList, settingValue, usage } from "./_input.ts";
import { CliError } from "./errors.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec } from "./types.ts";

/**
 * `client add <client_id>`: an OAuth client of the token service, added to
 * `CLIENTS_FILE` (made when missing) with a new secret that only the
 * command's output shows; the file keeps its hash.
 */
export const CLIENT_ADD: CommandSpec = {
  path: ["client", "add"],
  summary: "Register an OAuth client in CLIENTS_FILE; its new secret is printed once",
  details: [
    "The file keeps the secret's sha256: form only. The server reads the file at start: restart it to use the client.",
    "A public client (--public) has no secret: an app that cannot keep one, with the password and refresh_token grants.",
  ],
  positionals: [{ name: "client_id", doc: "the client's id, 1 to 128 printable characters" }],
  options: {
    grant: {
      type: "string",
      multiple: true,
      required: true,
      value: "TYPE",
      doc: `grant types: ${GRANT_TYPES.join(", ")}`,
    },
    scope: {
      type: "string",
      multiple: true,
      value: "SCOPE",
      doc: `scopes it may ask for: ${SCOPES.join(", ")}`,
    },
    permission: {
      type: "string",
      multiple: true,
      value: "NAME",
      doc: "introspect: may introspect every client's tokens (a resource server)",
    },
    public: { type: "boolean", doc: "make a public client, without a secret" },
    print: { type: "boolean", doc: "print the entry to add instead of writing CLIENTS_FILE" },
  },
  settings: [AUTH_SETTINGS.clientsFile],
  examples: [
    "client add reports-backend --grant client_credentials --scope SignUp",
    "client add phone-app --public --grant password,refresh_token --scope UserActivity",
  ],
  run: addClient,
};

async function addClient(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const id = input.positionals[0]!;
  const secret = optionFlag(input, "public") ? undefined : newSecret(io.random);
  const permissions = optionList(input, "permission");
  const entry: Record<string, unknown> = {
    client_id: id,
    ...(secret === undefined ? {} : { client_secret: `sha256:${sha256Hex(secret)}` }),
    grant_types: optionList(input, "grant"),
    scopes: optionList(input, "scope"),
    ...(permissions.length === 0 ? {} : { permissions }),
  };
  try {
    parseClients([entry]);
  } catch (error) {
    throw usage(
      CLIENT_ADD,
      (error as Error).message.replace(/^Cannot read client 1( \(.*?\))?: /, ""),
      error,
    );
  }
  const shown = { client_id: id, client_secret: secret ?? null };
  const secretLines = secret === undefined
    ? []
    : [`client_secret: ${secret}`, "(shown this once: the file keeps only its hash)"];
  if (optionFlag(input, "print")) {
    return {
      exitCode: 0,
      json: { ...shown, entry },
      lines: [JSON.stringify(entry, null, 2), ...secretLines],
    };
  }
  const file = settingValue(AUTH_SETTINGS.clientsFile, io.env).path;
  const text = await io.readText(file);
  // The file as the server would read it: a file it would refuse is not added to.
  if (
    text !== undefined && readClientsFile(text, file).clients.some((client) => client.id === id)
  ) {
    throw new CliError(
      "ERR_CLI_EXISTS",
      `Cannot add client "${id}": ${file} has a client of that id`,
    );
  }
  const clients = text === undefined ? [] : (JSON.parse(text) as unknown[]);
  await writeConfigJson(io, file, [...clients, entry], (next) => readClientsFile(next, file));
  return {
    exitCode: 0,
    json: { ...shown, file, entry },
    lines: [`Added client "${id}" to ${file}; restart the server to use it`, ...secretLines],
  };
}
