import type { AppDescription } from "./create_app.ts";

/**
 * Lines for a start-up banner: what was loaded and noted, the entry points,
 * then the demo credentials.
 * @param description what the app serves, from `App.describe`
 * @returns the lines, without newlines
 * @example
 * ```ts
 * for (const line of formatDescription(app.describe("http://127.0.0.1:8000"))) console.log(line);
 * ```
 */
export function formatDescription(description: AppDescription): string[] {
  return [
    ...description.notes,
    ...description.endpoints.map((endpoint) => `${endpoint.label}: ${endpoint.url}`),
    ...description.credentials.map((credential) => `${credential.label}: ${credential.value}`),
  ];
}
