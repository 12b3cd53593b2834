import type { ConfigOf, Environment, Setting, SettingsTable } from "./types.ts";

/**
 * Reads every setting of a table from the environment.
 * @param table the settings, nested in groups
 * @param env the environment
 * @returns the configuration, shaped like the table
 * @throws {ConfigError} naming the first variable whose value cannot be used
 * @example
 * ```ts
 * const TABLE = { port: integerSetting("PORT", { default: 8000, min: 0, max: 65_535, doc: "port" }) };
 * readSettings(TABLE, { PORT: "8080" }).port; // 8080
 * ```
 */
export function readSettings<T extends SettingsTable>(table: T, env: Environment): ConfigOf<T> {
  const out: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(table)) {
    out[key] = isSetting(entry) ? readSetting(entry, env) : readSettings(entry, env);
  }
  return out as ConfigOf<T>;
}

/**
 * Every setting of a table, groups flattened, in the order they are declared.
 * @param table the settings
 * @returns the settings
 */
export function listSettings(table: SettingsTable): Setting<unknown>[] {
  return Object.values(table).flatMap((
    entry,
  ) => (isSetting(entry) ? [entry] : listSettings(entry)));
}

function readSetting(setting: Setting<unknown>, env: Environment): unknown {
  for (const variable of setting.variables) {
    const text = env[variable];
    if (text !== undefined && text !== "") return setting.read(text, variable, env);
  }
  // Unset, or set empty: the last variable's own value tells which (some settings read "" as "none").
  const last = setting.variables[setting.variables.length - 1]!;
  return setting.read(env[last], last, env);
}

function isSetting(entry: Setting<unknown> | SettingsTable): entry is Setting<unknown> {
  return (entry as { kind?: unknown }).kind === "setting";
}
