// Shared by tests and benchmarks (it imports nothing of node:test).

/**
 * The URL in the machine-readable line a server prints once it listens,
 * `{"event": "listening", "url": ...}`, if it has printed one.
 * @param output the server's standard output so far
 * @returns the URL, or undefined before the line
 */
export function listeningLine(output: string): string | undefined {
  for (const line of output.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      const parsed = JSON.parse(line) as { event?: unknown; url?: unknown };
      if (parsed.event === "listening" && typeof parsed.url === "string") return parsed.url;
    } catch {
      // A line that is not JSON (or not whole yet): read on.
    }
  }
  return undefined;
}
