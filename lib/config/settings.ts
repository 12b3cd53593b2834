import { ConfigError } from "./errors.ts";
import type { Environment, Setting } from "./types.ts";

/** What every setting declares for the documentation. */
export interface SettingDoc {
  /** One line saying what the value does. */
  doc: string;
  /** The default as the documentation shows it, when the value itself does not say it well. */
  defaultText?: string;
}

/** Options of {@linkcode integerSetting}. */
export interface IntegerSettingOptions extends SettingDoc {
  default: number;
  min: number;
  max: number;
}

/**
 * An integer within a range. Spaces around the digits are ignored; signs,
 * fractions and exponents are refused.
 * @param variables the variable, or several read in order (the first set wins)
 * @param options default, range and documentation
 * @returns the setting
 * @example
 * ```ts
 * const port = integerSetting(["WEBHOOK_PORT", "PORT"], { default: 8000, min: 0, max: 65_535, doc: "port" });
 * ```
 */
export function integerSetting(
  variables: string | readonly string[],
  options: IntegerSettingOptions,
): Setting<number> {
  const { min, max } = options;
  return define(
    variables,
    options,
    String(options.default),
    `an integer from ${min} to ${max}`,
    (text, variable) => {
      if (text === undefined || text.trim() === "") return options.default;
      const parsed = /^[0-9]+$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
      if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
        throw new ConfigError(
          variable,
          `Cannot start: ${variable} must be an integer from ${min} to ${max}: current value is "${text}"`,
        );
      }
      return parsed;
    },
  );
}

/** Options of {@linkcode numberSetting}. */
export interface NumberSettingOptions extends SettingDoc {
  default: number;
  min: number;
}

/**
 * A decimal number at least `min`, such as `0.5`.
 * @param variable the variable
 * @param options default, lower bound and documentation
 * @returns the setting
 */
export function numberSetting(variable: string, options: NumberSettingOptions): Setting<number> {
  return define(
    variable,
    options,
    String(options.default),
    `a number >= ${options.min}`,
    (text, name) => {
      if (text === undefined || text.trim() === "") return options.default;
      const parsed = /^[0-9]+(\.[0-9]+)?$/.test(text.trim()) ? Number(text.trim()) : Number.NaN;
      if (!Number.isFinite(parsed) || parsed < options.min) {
        throw new ConfigError(
          name,
          `Cannot start: ${name} must be a number >= ${options.min}: current value is "${text}"`,
        );
      }
      return parsed;
    },
  );
}

/** Options of {@linkcode textSetting}. */
export interface TextSettingOptions extends SettingDoc {
  default: string;
  /**
   * What the text may be, for messages and the documentation.
   * @default {"text"}
   */
  accepts?: string;
  /** A pattern the whole (trimmed) text must match. */
  pattern?: RegExp;
  /**
   * Whether setting the variable empty means "none" (an empty string) rather than the default.
   * @default {false}
   */
  emptyMeansNone?: boolean;
}

/**
 * A text value, trimmed.
 * @param variable the variable
 * @param options default, pattern and documentation
 * @returns the setting
 */
export function textSetting(variable: string, options: TextSettingOptions): Setting<string> {
  const accepts = options.accepts ?? "text";
  return define(variable, options, options.default, accepts, (text, name) => {
    if (text === undefined) return options.default;
    const value = text.trim();
    if (value === "") return options.emptyMeansNone === true ? "" : options.default;
    if (options.pattern !== undefined && !options.pattern.test(value)) {
      throw new ConfigError(
        name,
        `Cannot start: ${name} must be ${accepts}: current value is "${value}"`,
      );
    }
    return value;
  });
}

/** A file or folder that a setting names, and whether the environment named it. */
export interface ConfigPath {
  /** The path as set (trimmed), or the default; empty for none (a setting set empty, where that means none). */
  readonly path: string;
  /**
   * Whether the variable was set: a path the user gave must exist (start-up
   * stops naming the variable when it cannot be read), while a default that
   * does not exist means none, so that a new project starts without the
   * files the defaults name.
   */
  readonly given: boolean;
}

/** Options of {@linkcode pathSetting}. */
export interface PathSettingOptions extends SettingDoc {
  /** The path when the variable is unset (or set empty, unless `emptyMeansNone`). */
  default: string;
  /**
   * What the path may be, for the documentation, e.g. `a file`.
   * @default {"a file"}
   */
  accepts?: string;
  /**
   * Whether setting the variable empty means "none" (an empty path, given) rather than the default.
   * @default {false}
   */
  emptyMeansNone?: boolean;
}

/**
 * A file or folder, trimmed, read as a {@linkcode ConfigPath} that tells a
 * path the environment gave from the default.
 * @param variable the variable
 * @param options default and documentation
 * @returns the setting
 * @example
 * ```ts
 * const clients = pathSetting("CLIENTS_FILE", { default: "data/clients.json", doc: "OAuth clients" });
 * readSettings({ clients }, {}).clients; // { path: "data/clients.json", given: false }
 * ```
 */
export function pathSetting(variable: string, options: PathSettingOptions): Setting<ConfigPath> {
  const fallback: ConfigPath = Object.freeze({ path: options.default, given: false });
  return define(variable, options, options.default, options.accepts ?? "a file", (text) => {
    const value = text?.trim() ?? "";
    if (value !== "") return Object.freeze({ path: value, given: true });
    return text !== undefined && options.emptyMeansNone === true
      ? Object.freeze({ path: "", given: true })
      : fallback;
  });
}

/** Options of {@linkcode choiceSetting}. */
export interface ChoiceSettingOptions<C extends string> extends SettingDoc {
  choices: readonly C[];
  default: C;
}

/**
 * One of a fixed set of words.
 * @param variable the variable
 * @param options the choices, default and documentation
 * @returns the setting
 */
export function choiceSetting<C extends string>(
  variable: string,
  options: ChoiceSettingOptions<C>,
): Setting<C> {
  const accepts = options.choices.map((choice) => `\`${choice}\``).join(", ");
  return define(variable, options, options.default, accepts, (text, name) => {
    if (text === undefined || text.trim() === "") return options.default;
    const found = options.choices.find((choice) => choice === text.trim());
    if (found === undefined) {
      throw new ConfigError(
        name,
        `Cannot start: ${name} must be one of ${
          options.choices.join(", ")
        }: current value is "${text.trim()}"`,
      );
    }
    return found;
  });
}

/** Options of {@linkcode listSetting}. */
export interface ListSettingOptions<T> extends SettingDoc {
  /** What one entry may be, e.g. `origins such as https://app.example.org`. */
  accepts: string;
  /**
   * Reads one entry; an error it throws is reported with the entry's place.
   * @default the entry as text
   */
  item?: (entry: string, index: number) => T;
  /** The value when the variable is unset or empty. @default {[]} */
  default?: readonly T[];
  /**
   * Whether the entries are secrets (keys): a message about one names its
   * place in the list but never quotes it.
   * @default {false}
   */
  secret?: boolean;
}

/**
 * A comma-separated list; entries are trimmed and empty ones dropped.
 * @param variable the variable
 * @param options how to read an entry, default and documentation
 * @returns the setting
 */
export function listSetting<T = string>(
  variable: string,
  options: ListSettingOptions<T>,
): Setting<readonly T[]> {
  const fallback: readonly T[] = options.default ?? [];
  const item = options.item ?? ((entry: string) => entry as T);
  return define(
    variable,
    options,
    fallback.join(","),
    `comma-separated ${options.accepts}`,
    (text, name) => {
      const entries = (text ?? "").split(",").map((part) => part.trim()).filter((part) =>
        part !== ""
      );
      if (entries.length === 0) return fallback;
      return entries.map((entry, index) => {
        try {
          return item(entry, index);
        } catch (error) {
          if (error instanceof ConfigError) throw error;
          const quoted = options.secret === true ? "" : ` ("${entry}")`;
          throw new ConfigError(
            name,
            `Cannot start: ${name} entry ${index + 1}${quoted} must be ${options.accepts}: ${
              messageOf(error)
            }`,
          );
        }
      });
    },
  );
}

/** Options of {@linkcode customSetting}. */
export interface CustomSettingOptions<T> extends SettingDoc {
  default: T;
  /** The default as the documentation shows it; empty for none. */
  defaultText: string;
  /** What a value may be, for messages and the documentation. */
  accepts: string;
  /**
   * Reads a value that is set and not empty (trimmed). An error it throws that
   * is not a `ConfigError` is reported as "must be <accepts>: <its message>".
   */
  parse: (text: string, env: Environment) => T;
  /**
   * The value when the variable is unset or empty; may throw a `ConfigError`
   * when another variable makes this one required.
   * @default the default
   */
  unset?: (env: Environment) => T;
}

/**
 * A setting read by a function of its own, for values such as URLs, keys or
 * schedules.
 * @param variable the variable
 * @param options how to read it, default and documentation
 * @returns the setting
 * @example
 * ```ts
 * const origin = customSetting("PUBLIC_URL", {
 *   default: undefined as string | undefined,
 *   defaultText: "",
 *   accepts: "an origin such as https://api.example.org",
 *   doc: "origin for links",
 *   parse: parseOrigin,
 * });
 * ```
 */
export function customSetting<T>(variable: string, options: CustomSettingOptions<T>): Setting<T> {
  return define(variable, options, options.defaultText, options.accepts, (text, name, env) => {
    if (text === undefined || text.trim() === "") {
      return options.unset === undefined ? options.default : options.unset(env);
    }
    try {
      return options.parse(text.trim(), env);
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      throw new ConfigError(
        name,
        `Cannot start: ${name} must be ${options.accepts}: ${messageOf(error)}`,
      );
    }
  });
}

function define<T>(
  variables: string | readonly string[],
  docs: SettingDoc,
  defaultText: string,
  accepts: string,
  read: (text: string | undefined, variable: string, env: Environment) => T,
): Setting<T> {
  const names = typeof variables === "string" ? [variables] : [...variables];
  if (names.length === 0) {
    throw new TypeError("Cannot define a setting: it needs at least one variable");
  }
  return Object.freeze({
    kind: "setting" as const,
    variables: Object.freeze(names),
    accepts,
    defaultText: docs.defaultText ?? defaultText,
    doc: docs.doc,
    read,
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
