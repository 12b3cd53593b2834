import type { Setting } from "./types.ts";

/**
 * Renders settings as a Markdown table (variable, default, accepted values,
 * meaning), as the README shows them.
 * @param settings the settings, e.g. from `listSettings`
 * @returns the table, one row per setting, ending with a newline
 */
export function renderSettingsTable(settings: readonly Setting<unknown>[]): string {
  const rows = ["| Variable | Default | Accepts | Meaning |", "| --- | --- | --- | --- |"];
  for (const setting of settings) {
    const variables = setting.variables.map((name) => `\`${name}\``).join(", then ");
    const fallback = setting.defaultText === "" ? "" : `\`${setting.defaultText}\``;
    rows.push(`| ${variables} | ${fallback} | ${cell(setting.accepts)} | ${cell(setting.doc)} |`);
  }
  return `${rows.join("\n")}\n`;
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|").replaceAll("\n", " ");
}
