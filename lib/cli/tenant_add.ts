import { parseApiKey } from "../http/mod.ts";
import { RELAY_ID } from "../relay/_internal.ts";
import { readTenantsFile, RELAY_SETTINGS, TenantRegistry } from "../relay/mod.ts";
import { newSecret, writeConfigJson } from "./_files.ts";
import { optionFlag, settingValue, usage } from "./_input.ts";
import { CliError } from "./errors.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec } from "./types.ts";

/**
 * `tenant add <id>`: a tenant of the webhook relay, added to `TENANTS_FILE`
 * (made when missing) with a new API key that only the command's output
 * shows; the file keeps its hash.
 */
export const TENANT_ADD: CommandSpec = {
  path: ["tenant", "add"],
  summary: "Add a relay tenant to TENANTS_FILE; its new API key is printed once",
  details: [
    "The file keeps the key's sha256: form only. The server reads the file at start: restart it to use the tenant,",
    'then create its endpoints with "endpoint add" and that key.',
  ],
  positionals: [{ name: "id", doc: 'the tenant\'s id: 1 to 64 letters, digits, "_" or "-"' }],
  options: {
    print: { type: "boolean", doc: "print the entry to add instead of writing TENANTS_FILE" },
  },
  settings: [RELAY_SETTINGS.tenantsFile],
  examples: ["tenant add acme", "tenant add acme --json | jq -r .api_key > acme.key"],
  run: addTenant,
};

async function addTenant(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const id = input.positionals[0]!;
  if (!RELAY_ID.test(id)) {
    throw usage(
      TENANT_ADD,
      `the id ${JSON.stringify(id)} must be 1 to 64 letters, digits, "_" or "-"`,
    );
  }
  const key = newSecret(io.random);
  const entry = { id, api_keys: [`sha256:${parseApiKey(id, key).hash}`], endpoints: [] };
  const keyLines = [`api_key: ${key}`, "(shown this once: the file keeps only its hash)"];
  if (optionFlag(input, "print")) {
    return {
      exitCode: 0,
      json: { id, api_key: key, entry },
      lines: [JSON.stringify(entry, null, 2), ...keyLines],
    };
  }
  const file = settingValue(RELAY_SETTINGS.tenantsFile, io.env).path;
  const text = await io.readText(file);
  const registry = (): TenantRegistry => new TenantRegistry({ now: io.now, random: io.random });
  let tenants: unknown[] = [];
  if (text !== undefined) {
    // The file as the server would read it: a file it would refuse is not added to.
    const existing = registry();
    readTenantsFile(existing, text, file);
    if (existing.hasTenant(id)) {
      throw new CliError(
        "ERR_CLI_EXISTS",
        `Cannot add tenant "${id}": ${file} has a tenant of that id`,
      );
    }
    tenants = (JSON.parse(text) as { tenants: unknown[] }).tenants;
  }
  await writeConfigJson(
    io,
    file,
    { tenants: [...tenants, entry] },
    (next) => readTenantsFile(registry(), next, file),
  );
  return {
    exitCode: 0,
    json: { id, api_key: key, file, entry },
    lines: [`Added tenant "${id}" to ${file}; restart the server to use it`, ...keyLines],
  };
}
