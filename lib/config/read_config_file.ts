import { readFile } from "node:fs/promises";
import { ConfigError } from "./errors.ts";
import type { ConfigPath } from "./settings.ts";

/**
 * Reads a text file that a setting names.
 * @param file the file's path
 * @param variable the variable that names it, for the message
 * @returns the file's text
 * @throws {ConfigError} naming the variable and the file when it cannot be read
 */
export async function readConfigFile(file: string, variable: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (error) {
    const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ConfigError(
      variable,
      `Cannot start: ${variable} names ${file}, which cannot be read (${why})`,
    );
  }
}

/**
 * Reads the text file a {@linkcode pathSetting} names: undefined when the
 * setting was left at its default and no file is there (a new project), or
 * when it was set empty for none.
 * @param file the setting's value
 * @param variable the variable that names it, for the message
 * @returns the file's text, or undefined for none
 * @throws {ConfigError} naming the variable and the file when a file given (or a default that exists) cannot be read
 * @example
 * ```ts
 * const text = await readConfigPath(config.clientsFile, "CLIENTS_FILE");
 * const clients = text === undefined ? [] : readClientsFile(text, config.clientsFile.path).clients;
 * ```
 */
export async function readConfigPath(
  file: ConfigPath,
  variable: string,
): Promise<string | undefined> {
  if (file.path === "") return undefined;
  try {
    return await readFile(file.path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // A default that is not there (nor its folder): none.
    if (!file.given && (code === "ENOENT" || code === "ENOTDIR")) return undefined;
    throw new ConfigError(
      variable,
      `Cannot start: ${variable} names ${file.path}, which cannot be read (${
        code ?? (error as Error).message
      })`,
    );
  }
}
