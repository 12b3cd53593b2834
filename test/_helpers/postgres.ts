// A real PostgreSQL for the tests, of the project's own: TEST_DATABASE_URL
// when set (a server the user chose), else a cluster made by initdb in a
// temporary folder and started by pg_ctl on a free loopback port (Debian's
// postgresql package gives both). Never a server that happens to run on the
// machine. Each suite gets a fresh database. Without either, a developer's
// run skips the PostgreSQL suites and says so; REQUIRE_SERVICES=1 (as .ci/run
// sets) makes that a failure.
import { spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { freePort } from "./redis.ts";

const given = process.env["TEST_DATABASE_URL"];
const required = process.env["REQUIRE_SERVICES"] === "1";

/** The folder of initdb and pg_ctl: on PATH, or Debian's newest /usr/lib/postgresql/<version>/bin. */
function findBin(): string | undefined {
  const onPath = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" });
  if (onPath.status === 0 && onPath.stdout.trim() !== "") return join(onPath.stdout.trim(), "..");
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((name) => existsSync(join(root, name, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : join(root, versions[0], "bin");
}

const bin = findBin();

/** For `describe(name, { skip: postgresSkip }, ...)`. */
export const postgresSkip: false | string = given !== undefined || bin !== undefined || required
  ? false
  : "PostgreSQL's initdb is not installed (Debian package postgresql) and TEST_DATABASE_URL is not set; set REQUIRE_SERVICES=1 to fail instead";

/** For tests that stop and start the server itself, so need the binaries whatever TEST_DATABASE_URL says. */
export const postgresServerSkip: false | string = bin !== undefined || required
  ? false
  : "PostgreSQL's initdb is not installed (Debian package postgresql); set REQUIRE_SERVICES=1 to fail instead";

/** A PostgreSQL server the tests use. */
export interface TestPostgres {
  /** A URL of its maintenance database, `postgres`. */
  readonly url: string;
  /** Creates a fresh database and gives its URL. */
  database(): Promise<string>;
  /** Stops the server at once, as a crash would (`pg_ctl stop -m immediate`); only for a spawned server. */
  crash(): void;
  /** Starts it again on the same port and data. */
  restart(): void;
  /** {@linkcode TestPostgres.crash}, without blocking the event loop (for tests that time answers meanwhile). */
  crashAsync(): Promise<void>;
  /** {@linkcode TestPostgres.restart}, without blocking the event loop. */
  restartAsync(): Promise<void>;
  /** The server's main process, for a benchmark to pin; undefined for a server not started here. */
  pid(): number | undefined;
  /**
   * The URL of a database through the server's Unix socket (cheaper than loopback TCP), when it was started here.
   * @param url a database's URL from {@linkcode TestPostgres.database}
   */
  viaSocket(url: string): string;
  stop(): Promise<void>;
}

let counter = 0;

/**
 * Starts a PostgreSQL for a test file (or uses TEST_DATABASE_URL, unless `own` is set).
 * @param own whether the test needs a server of its own, to stop and start
 * @returns the server
 */
export async function startPostgres(own = false): Promise<TestPostgres> {
  const { default: pg } = await import("pg");
  const create = async (url: string): Promise<string> => {
    const name = `tributary_test_${process.pid}_${++counter}_${Date.now().toString(36)}`;
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${name}`);
    } finally {
      await client.end();
    }
    const next = new URL(url);
    next.pathname = `/${name}`;
    return next.href;
  };
  if (given !== undefined && !own) {
    return {
      url: given,
      database: () => create(given),
      crash: () => {},
      restart: () => {},
      crashAsync: () => Promise.resolve(),
      restartAsync: () => Promise.resolve(),
      pid: () => undefined,
      viaSocket: (url) => url,
      stop: () => Promise.resolve(),
    };
  }
  if (bin === undefined) {
    throw new Error(
      "REQUIRE_SERVICES=1 but PostgreSQL's initdb is not installed (Debian package postgresql)",
    );
  }
  const home = mkdtempSync(join(tmpdir(), "tributary-pg-"));
  const data = join(home, "data");
  const port = await freePort();
  // PostgreSQL refuses to run as root: as root, the cluster belongs to the postgres user.
  const asRoot = userInfo().uid === 0;
  const run = (command: string, args: readonly string[]): void => {
    const full = join(bin, command);
    const result = asRoot
      ? spawnSync("runuser", ["-u", "postgres", "--", full, ...args], { encoding: "utf8" })
      : spawnSync(full, args, { encoding: "utf8" });
    if (result.status !== 0) throw new Error(`${command} failed: ${result.stdout}${result.stderr}`);
  };
  if (asRoot) {
    chmodSync(home, 0o755);
    const owner = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const group = spawnSync("id", ["-g", "postgres"], { encoding: "utf8" });
    chownSync(home, Number(owner.stdout), Number(group.stdout));
  }
  run("initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-instructions"]);
  const options =
    `-p ${port} -k ${home} -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=on`;
  const runAsync = (command: string, args: readonly string[]): Promise<void> => {
    const full = join(bin, command);
    const child = asRoot
      ? spawn("runuser", ["-u", "postgres", "--", full, ...args])
      : spawn(full, args);
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    return new Promise((resolve, reject) => {
      child.on("error", reject);
      child.on(
        "close",
        (code) => (code === 0 ? resolve() : reject(new Error(`${command} failed: ${output}`))),
      );
    });
  };
  const startArgs = ["-D", data, "-o", options, "-l", join(home, "log"), "-w", "-t", "60", "start"];
  const start = (): void => run("pg_ctl", startArgs);
  start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let running = true;
  return {
    url,
    database: () => create(url),
    crash: () => {
      run("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      running = false;
    },
    restart: () => {
      start();
      running = true;
    },
    crashAsync: async () => {
      await runAsync("pg_ctl", ["-D", data, "-m", "immediate", "stop"]);
      running = false;
    },
    restartAsync: async () => {
      await runAsync("pg_ctl", startArgs);
      running = true;
    },
    pid: () => Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]),
    viaSocket: (url) => url.replace(`@127.0.0.1:${port}/`, `@${encodeURIComponent(home)}:${port}/`),
    stop: () => {
      if (running) run("pg_ctl", ["-D", data, "-m", "fast", "stop"]);
      running = false;
      rmSync(home, { recursive: true, force: true });
      return Promise.resolve();
    },
  };
}
