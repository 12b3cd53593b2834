// A real Kafka-protocol cluster for the tests: librdkafka's mock cluster,
// run by test/kafka_mock/mock_cluster.c (built here against Debian's
// librdkafka-dev when its binary is missing or older than its source).
// Without a C compiler and librdkafka-dev, a developer's run skips the Kafka
// suites and says so; with REQUIRE_SERVICES=1 (as .ci/run sets) they fail.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { createInterface, type Interface } from "node:readline";

const DIR = join(import.meta.dirname, "..", "kafka_mock");
const SOURCE = join(DIR, "mock_cluster.c");
const BINARY = join(DIR, "mock_cluster");
const required = process.env["REQUIRE_SERVICES"] === "1";

/**
 * Builds the mock-cluster program when it is missing or stale.
 * @returns why it cannot be built, or undefined when it is ready
 */
function build(): string | undefined {
  if (existsSync(BINARY) && statSync(BINARY).mtimeMs >= statSync(SOURCE).mtimeMs) return undefined;
  const flags = spawnSync("pkg-config", ["--cflags", "--libs", "rdkafka"], { encoding: "utf8" });
  if (flags.status !== 0) return "librdkafka-dev is not installed (pkg-config rdkafka fails)";
  const cc = spawnSync("cc", [
    "-O2",
    "-Wall",
    "-o",
    BINARY,
    SOURCE,
    ...flags.stdout.trim().split(/\s+/),
  ], { encoding: "utf8" });
  if (cc.status !== 0) return `cannot build ${SOURCE}: ${cc.error?.message ?? cc.stderr}`;
  return undefined;
}

const unbuildable = build();

/** For `describe(name, { skip: kafkaSkip }, ...)`. */
export const kafkaSkip: false | string = unbuildable === undefined || required
  ? false
  : `${unbuildable}; set REQUIRE_SERVICES=1 to fail instead`;

/** A running mock cluster. */
export interface TestKafka {
  /** Bootstrap addresses, `127.0.0.1:<port>` each. */
  readonly brokers: readonly string[];
  /** The program's process id. */
  readonly pid: number;
  /** Takes broker `id` (1 to 3) down; its partitions and groups move to the others. */
  down(id: number): Promise<void>;
  /** Brings broker `id` back. */
  up(id: number): Promise<void>;
  /** Creates a topic. */
  topic(name: string, partitions: number): Promise<void>;
  /** Makes broker `id` the leader of a topic's partition. */
  leader(topic: string, partition: number, id: number): Promise<void>;
  /** Answers the next request of Kafka API key `api` (12 = Heartbeat) with error `code`. */
  error(api: number, code: number): Promise<void>;
  /** Registers a consumer group, so that `down` moves its coordinator. */
  group(name: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts a 3-broker mock cluster with topics made up front.
 * @param topics partitions by topic name
 * @param groups consumer groups whose coordinators `down` moves
 * @throws {Error} when the program cannot be built or started
 */
export async function startKafka(
  topics: Readonly<Record<string, number>> = {},
  groups: readonly string[] = [],
): Promise<TestKafka> {
  if (unbuildable !== undefined) {
    throw new Error(
      `REQUIRE_SERVICES=1 but the Kafka mock cluster is not available: ${unbuildable}`,
    );
  }
  const args = [
    "3",
    ...Object.entries(topics).map(([name, count]) => `${name}:${count}`),
    ...groups.map((group) => `@${group}`),
  ];
  const child: ChildProcess = spawn(BINARY, args, { stdio: ["pipe", "pipe", "pipe"] });
  let errors = "";
  child.stderr!.on("data", (chunk: Buffer) => (errors += chunk.toString()));
  const lines: Interface = createInterface({ input: child.stdout! });
  const iterator = lines[Symbol.asyncIterator]();
  const exited = once(child, "exit").then(() => ({ done: true, value: undefined }));
  async function next(): Promise<string> {
    const line = await Promise.race([iterator.next(), exited]);
    if (line.done === true || line.value === undefined) {
      throw new Error(`the mock cluster exited: ${errors}`);
    }
    return line.value as string;
  }
  const first = await next();
  const match = /^bootstrap (\S+)$/.exec(first);
  if (match === null) throw new Error(`the mock cluster said ${first}`);
  let commands = Promise.resolve();
  function command(text: string): Promise<void> {
    const run = commands.then(async () => {
      child.stdin!.write(`${text}\n`);
      const answer = await next();
      if (answer !== "ok") throw new Error(`the mock cluster refused "${text}": ${answer}`);
    });
    commands = run.catch(() => {});
    return run;
  }
  return {
    brokers: match[1]!.split(","),
    pid: child.pid!,
    down: (id) => command(`down ${id}`),
    up: (id) => command(`up ${id}`),
    topic: (name, partitions) => command(`topic ${name} ${partitions}`),
    leader: (name, partition, id) => command(`leader ${name} ${partition} ${id}`),
    error: (api, code) => command(`error ${api} ${code}`),
    group: (name) => command(`group ${name}`),
    async stop() {
      if (child.exitCode !== null) return;
      child.stdin!.end();
      await once(child, "exit");
    },
  };
}
