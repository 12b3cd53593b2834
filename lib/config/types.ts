/** Environment variables, as `process.env` holds them. */
export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * One configuration value: the variables it is read from, what it accepts,
 * its default and a line of documentation. The README's configuration table
 * is rendered from these, so the two cannot drift apart.
 */
export interface Setting<T> {
  readonly kind: "setting";
  /** The variables read, in order: the first one set (and not empty) wins. */
  readonly variables: readonly string[];
  /** What a value may be, e.g. `an integer from 0 to 65535`. */
  readonly accepts: string;
  /** The default as the documentation shows it; empty when there is none. */
  readonly defaultText: string;
  /** One line saying what the value does. */
  readonly doc: string;
  /**
   * Reads the value.
   * @param text the variable's value as set; undefined when unset
   * @param variable the variable it came from, for messages
   * @param env the whole environment, for rules that look at another variable
   * @returns the value
   * @throws {ConfigError} naming the variable and what it accepts
   */
  read(text: string | undefined, variable: string, env: Environment): T;
}

/** Settings by configuration key, nested in groups: `{ kafka: { brokers: ... } }`. */
export interface SettingsTable {
  readonly [key: string]: Setting<unknown> | SettingsTable;
}

/** The configuration a table reads to: each setting's value under its key. */
export type ConfigOf<T extends SettingsTable> = {
  readonly [K in keyof T]: T[K] extends Setting<infer V> ? V
    : T[K] extends SettingsTable ? ConfigOf<T[K]>
    : never;
};
