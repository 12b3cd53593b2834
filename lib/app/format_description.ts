import type { ServiceCredential } from "../http/mod.ts";
import type { AppDescription } from "./app_types.ts";
import { isDemoCredential } from "./is_demo_credential.ts";

/** Options of {@linkcode formatDescription}. */
export interface FormatDescriptionOptions {
  /**
   * Whether the lines go to a person at a terminal (the server passes
   * `process.stdout.isTTY`): only then are the demo data's credentials shown.
   * A log that is not a terminal is read by collectors and shipped anywhere.
   * @default {false}
   */
  readonly terminal?: boolean;
  /**
   * Whether a credential's value is public, so that a terminal may show it.
   * @default {isDemoCredential}: the demo files' shipped values, at their default paths
   */
  readonly isPublic?: (credential: ServiceCredential) => boolean;
}

/**
 * Lines for a start-up banner: what was loaded and noted, the entry points,
 * then the credentials given in plain text. A credential's value is shown
 * only on a terminal and only when it is public (the demo data's); otherwise
 * its line says which file holds it. No line holds any other secret.
 * @param description what the app serves, from `App.describe`
 * @param options whether the lines go to a terminal
 * @returns the lines, without newlines
 * @example
 * ```ts
 * const lines = formatDescription(app.describe("http://127.0.0.1:8000"), { terminal: process.stdout.isTTY });
 * for (const line of lines) console.log(line);
 * ```
 */
export function formatDescription(
  description: AppDescription,
  options: FormatDescriptionOptions = {},
): string[] {
  const isPublic = options.isPublic ?? isDemoCredential;
  const shown = (credential: ServiceCredential): boolean =>
    options.terminal === true && isPublic(credential);
  return [
    ...description.notes,
    ...description.endpoints.map((endpoint) => `${endpoint.label}: ${endpoint.url}`),
    ...description.credentials.flatMap((credential) => {
      const value = shown(credential) ? credential.value : undefined;
      const line = value === undefined
        ? `${credential.label}: see ${credential.file}`
        : `${credential.label}: ${value} (the demo data's, from ${credential.file})`;
      if (credential.example === undefined) return [line];
      return [
        line,
        `Try: ${credential.example.replaceAll("{value}", value ?? `<from ${credential.file}>`)}`,
      ];
    }),
  ];
}
