// Writes the README's configuration table from the settings tables
// (lib/app/read_config.ts and each service's settings.ts), between its
// markers. Usage: npm run docs    (test/app/readme_config.test.ts checks it)
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { appSettings } from "../lib/app/read_config.ts";
import { renderSettingsTable } from "../lib/config/mod.ts";

/** The markers around the generated table in the README. */
export const TABLE_START =
  "<!-- configuration table: written by `npm run docs` from the settings tables; edit those -->";
export const TABLE_END = "<!-- end of configuration table -->";

/**
 * The README with its configuration table rendered anew.
 * @param readme the README's text
 * @returns the text with the table between the markers replaced
 */
export function withConfigTable(readme: string): string {
  const start = readme.indexOf(TABLE_START);
  const end = readme.indexOf(TABLE_END);
  if (start === -1 || end < start) {
    throw new Error(`Cannot find the configuration table's markers in the README`);
  }
  return `${readme.slice(0, start + TABLE_START.length)}\n${renderSettingsTable(appSettings())}${
    readme.slice(end)
  }`;
}

if (process.argv[1] === import.meta.filename) {
  const file = join(import.meta.dirname, "..", "README.md");
  writeFileSync(file, withConfigTable(readFileSync(file, "utf8")));
  console.log(`Wrote the configuration table of ${file}`);
}
