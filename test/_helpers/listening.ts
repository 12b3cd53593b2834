// Shared by tests and benchmarks (it imports nothing of node:test).

/**
 * The machine-readable line a server prints once it listens,
 * `{"event": "listening", "url": ...}`, parsed, if it has printed one.
 * @param output the server's standard output so far
 * @returns the line's fields, or undefined before the line
 */
export function listeningRecord(
  output: string,
): Readonly<Record<string, unknown>> & { readonly url: string } | undefined {
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (parsed["event"] === "listening" && typeof parsed["url"] === "string") {
        return parsed as Record<string, unknown> & { url: string };
      }
    } catch {
      // A line that is not JSON (or not whole yet): read on.
    }
  }
  return undefined;
}

/**
 * The URL in the machine-readable line a server prints once it listens,
 * `{"event": "listening", "url": ...}`, if it has printed one.
 * @param output the server's standard output so far
 * @returns the URL, or undefined before the line
 */
export function listeningLine(output: string): string | undefined {
  return listeningRecord(output)?.url;
}
