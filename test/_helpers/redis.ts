// A real Redis for the tests: REDIS_URL when set, else a redis-server spawned
// on a free loopback port with append-only persistence in a temporary
// directory. Without either, a developer's run skips the Redis suites and
// says so; with REQUIRE_SERVICES=1 (as .ci/run sets) they fail instead.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const given = process.env["REDIS_URL"];
const binary = spawnSync("redis-server", ["--version"], { stdio: "ignore" }).status === 0;
const required = process.env["REQUIRE_SERVICES"] === "1";

/** For `describe(name, { skip: redisSkip }, ...)`. */
export const redisSkip: false | string = given !== undefined || binary || required
  ? false
  : "redis-server is not installed and REDIS_URL is not set; set REQUIRE_SERVICES=1 to fail instead";

/** For tests that kill and restart the server, so need the binary whatever REDIS_URL says. */
export const redisServerSkip: false | string = binary || required
  ? false
  : "redis-server is not installed; set REQUIRE_SERVICES=1 to fail instead";

/** A Redis the tests use. */
export interface TestRedis {
  readonly url: string;
  /** The spawned server; undefined with REDIS_URL. */
  readonly child: ChildProcess | undefined;
  stop(): Promise<void>;
}

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  server.close();
  await once(server, "close");
  return port;
}

/**
 * Starts a Redis for a test file (or uses REDIS_URL, unless `dir` is given).
 * @param dir where the append-only file goes, for a server to restart on the
 * same data; a fresh temporary directory by default
 * @param port the port; a free one by default
 * @returns its URL and how to stop it
 */
export async function startRedis(dir?: string, port?: number): Promise<TestRedis> {
  if (given !== undefined && dir === undefined) {
    return {
      url: given,
      child: undefined,
      stop: () => Promise.resolve(),
    };
  }
  if (!binary) {
    throw new Error(
      "REQUIRE_SERVICES=1 but redis-server is not on PATH (Debian package redis-server)",
    );
  }
  const home = dir ?? mkdtempSync(join(tmpdir(), "tributary-redis-"));
  const chosen = port ?? (await freePort());
  const child = spawn("redis-server", [
    "--port",
    String(chosen),
    "--bind",
    "127.0.0.1",
    "--dir",
    home,
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
    "--save",
    "",
    "--daemonize",
    "no",
    "--loglevel",
    "notice",
  ], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  // Ready once it says so (its log goes to stdout).
  while (!output.includes("Ready to accept connections")) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
    await Promise.race([once(child.stdout!, "data"), once(child, "exit")]);
  }
  return {
    url: `redis://127.0.0.1:${chosen}`,
    child,
    async stop() {
      if (child.exitCode === null) {
        child.kill("SIGTERM");
        await once(child, "exit");
      }
      if (dir === undefined) rmSync(home, { recursive: true, force: true });
    },
  };
}
