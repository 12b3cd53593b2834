import { readFile } from "node:fs/promises";
import { ConfigError } from "./errors.ts";

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
    throw new ConfigError(variable, `Cannot start: ${variable} names ${file}, which cannot be read (${why})`);
  }
}
