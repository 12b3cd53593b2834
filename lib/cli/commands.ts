import { CLIENT_ADD } from "./client_add.ts";
import { DATA_CHECK } from "./data_check.ts";
import { ENDPOINT_ADD, ENDPOINT_LIST, ENDPOINT_ROTATE_SECRET } from "./endpoint_commands.ts";
import { KEY_HASH } from "./key_hash.ts";
import { MIGRATE } from "./migrate_command.ts";
import { STATE_CHECK, STATE_REPAIR } from "./state_commands.ts";
import { TENANT_ADD } from "./tenant_add.ts";
import type { CommandSpec } from "./types.ts";

/** Every command of `tributary`, in the order the help lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  KEY_HASH,
  CLIENT_ADD,
  TENANT_ADD,
  ENDPOINT_ADD,
  ENDPOINT_LIST,
  ENDPOINT_ROTATE_SECRET,
  DATA_CHECK,
  MIGRATE,
  STATE_CHECK,
  STATE_REPAIR,
];
