// Shared by the benchmarks' own servers: where they listen, and the line
// bench/_processes.ts (startPinnedServer) waits for.
import type { Server } from "node:net";

/**
 * Listens on a free port of 127.0.0.1 and prints `{"event":"listening","url":…}`.
 * @param server the server
 * @param scheme its URL's scheme
 */
export function listenOnLoopback(server: Server, scheme: "http" | "https" = "http"): void {
  server.listen(0, "127.0.0.1", () => {
    const address = server.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    console.log(JSON.stringify({ event: "listening", url: `${scheme}://127.0.0.1:${port}` }));
  });
}
