import { normalize } from "node:path";
import { AUTH_SETTINGS } from "../auth/mod.ts";
import type { ServiceCredential } from "../http/mod.ts";
import { RELAY_SETTINGS } from "../relay/mod.ts";
import { WATER_SETTINGS } from "../water/mod.ts";

/** The plain credentials one demo file of this repository holds. */
export interface DemoFile {
  /** The setting that names the file, e.g. `API_KEYS_FILE`. */
  readonly setting: string;
  /** Its path: the setting's default. */
  readonly file: string;
  /** The plain secrets it ships with. */
  readonly values: readonly string[];
}

/**
 * The credentials the repository's demo files (`data/api_keys.json`,
 * `data/clients.json`, `data/tenants.json`) hold in plain text. They are
 * public (anyone reads them in the repository and the README), so showing
 * them gives nothing away; a test checks this table against the files.
 */
export const DEMO_CREDENTIALS: readonly DemoFile[] = [
  {
    setting: "API_KEYS_FILE",
    file: WATER_SETTINGS.apiKeysFile.defaultText,
    values: ["tributary-demo-key"],
  },
  {
    setting: "CLIENTS_FILE",
    file: AUTH_SETTINGS.clientsFile.defaultText,
    values: ["demo-backend-secret"],
  },
  {
    setting: "TENANTS_FILE",
    file: RELAY_SETTINGS.tenantsFile.defaultText,
    values: ["demo-acme-key", "demo-globex-key"],
  },
];

/**
 * Whether a credential is the demo data's: read from its setting's default
 * file, and a value that file ships with. A file at the default path whose
 * values were changed, or the demo values copied into another file, are not.
 * @param credential a credential a service describes
 * @returns true for a public demo credential
 */
export function isDemoCredential(credential: ServiceCredential): boolean {
  const demo = DEMO_CREDENTIALS.find((entry) => entry.setting === credential.setting);
  return demo !== undefined && normalize(credential.file) === normalize(demo.file) &&
    demo.values.includes(credential.value);
}
