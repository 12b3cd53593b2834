import { type Environment, readSettings, type Setting } from "../config/mod.ts";
import { CliError } from "./errors.ts";
import type { CommandInput, CommandSpec } from "./types.ts";

/** A string option's value; undefined when not given. */
export function optionText(input: CommandInput, key: string): string | undefined {
  const value = input.values[key];
  return typeof value === "string" ? value : undefined;
}

/** A repeatable option's values, each split at commas, trimmed, empty parts dropped. */
export function optionList(input: CommandInput, key: string): string[] {
  const value = input.values[key];
  const given = value === undefined ? [] : Array.isArray(value) ? value : [value];
  return given.flatMap((entry) => String(entry).split(",")).map((part) => part.trim()).filter((
    part,
  ) => part !== "");
}

/** Whether a boolean option was given. */
export function optionFlag(input: CommandInput, key: string): boolean {
  return input.values[key] === true;
}

/** One setting's value, read from the environment as the server reads it. */
export function settingValue<T>(setting: Setting<T>, env: Environment): T {
  return readSettings({ value: setting }, env).value as T;
}

/** An `ERR_CLI_USAGE` error about a command. */
export function usage(
  command: CommandSpec | readonly string[],
  why: string,
  cause?: unknown,
): CliError {
  const path = "path" in command ? command.path : command;
  return new CliError("ERR_CLI_USAGE", `Cannot run ${path.join(" ")}: ${why}`, {
    command: path,
    ...(cause === undefined ? {} : { cause }),
  });
}
