// Shared by the HTTP benchmarks: servers run in their own processes pinned to
// the last CPU, and the load generator in its own process pinned to the first
// (taskset, on Linux with two or more CPUs), so neither shares its core with
// the other and the scheduler cannot move them.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import type { Socket } from "node:net";
import { availableParallelism, cpus as cpuTimes, tmpdir } from "node:os";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { freePort } from "../test/_helpers/redis.ts";
import { ROOT } from "./_data.ts";
import type { LoadOptions, LoadResult } from "./_load.ts";
import { listeningLine } from "../test/_helpers/listening.ts";

const PINNED = existsSync("/usr/bin/taskset") && availableParallelism() >= 2;
const SERVER_PIN = PINNED ? ["taskset", "-c", String(availableParallelism() - 1)] : [];
const CLIENT_PIN = PINNED ? ["taskset", "-c", "0"] : [];

/**
 * A command pinned to the servers' CPU or the load generator's, with taskset
 * (unchanged where it cannot pin).
 * @param command the command and its arguments
 * @param cpu which CPU
 * @returns the command to spawn
 */
export function pinnedCommand(
  command: readonly string[],
  cpu: "server" | "client",
): string[] {
  return [...(cpu === "server" ? SERVER_PIN : CLIENT_PIN), ...command];
}

/** The load generator's process, started on first use and kept for the next runs. */
let loader: { child: ChildProcess; results: AsyncIterator<string> } | undefined;
/** Runs wait for the one before (the loader runs one at a time). */
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs bench/_load.ts in its own pinned process, one kept from run to run
 * (so that the client is warm), one run at a time.
 * @param options the request and the load
 * @returns what the run measured
 */
export function runPinnedLoad(options: LoadOptions): Promise<LoadResult> {
  const run = queue.then(() => loadOnce(options));
  queue = run.catch(() => undefined);
  return run;
}

/**
 * The load generator's process id, once a run has started it.
 * @returns its pid, or undefined before the first run
 */
export function loadGeneratorPid(): number | undefined {
  return loader?.child.pid;
}

async function loadOnce(options: LoadOptions): Promise<LoadResult> {
  if (loader === undefined) {
    const [command, ...rest] = [
      ...CLIENT_PIN,
      process.execPath,
      "--import",
      "tsx",
      "bench/_load_child.ts",
    ];
    const child = spawn(command!, rest, { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
    loader = { child, results: createInterface({ input: child.stdout! })[Symbol.asyncIterator]() };
  }
  const { child, results } = loader;
  // Between runs the loader does not keep this process alive: its standard input ends with this process, and it with it.
  for (const stream of [child.stdin, child.stdout] as const) (stream as Socket).ref();
  child.ref();
  try {
    child.stdin!.write(`${JSON.stringify(options)}\n`);
    const next = await results.next();
    if (next.done === true) {
      loader = undefined;
      throw new Error(`the load generator exited (${child.exitCode ?? child.signalCode})`);
    }
    const result = JSON.parse(next.value) as LoadResult | { error: string };
    if ("error" in result) throw new Error(`load generator: ${result.error}`);
    return result;
  } finally {
    for (const stream of [child.stdin, child.stdout] as const) (stream as Socket | null)?.unref();
    child.unref();
  }
}

/**
 * Starts a pinned Node server process and waits for its machine-readable listening line.
 * @param args Node's arguments
 * @param env variables added to this process's environment
 * @param cpu the servers' CPU (the default), or the load generator's, for a process that serves the servers
 * @param node the Node binary (this process's by default), e.g. a Node 24 for a peer that needs it
 * @returns the process, the URL it listens on and its output up to its listening line
 */
export async function startPinnedServer(
  args: readonly string[],
  env: Record<string, string> = {},
  cpu: "server" | "client" = "server",
  node: string = process.execPath,
): Promise<{ child: ChildProcess; url: string; output: string }> {
  const [command, ...rest] = [
    ...(cpu === "server" ? SERVER_PIN : CLIENT_PIN),
    node,
    ...args,
  ];
  const child = spawn(command!, rest, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  for (;;) {
    const url = listeningLine(output);
    if (url !== undefined) {
      // From here on its lines (the access log) are drained, not kept: a run would otherwise hold every line in memory.
      child.stdout!.removeAllListeners("data");
      child.stdout!.resume();
      return { child, url, output };
    }
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited: ${output}`);
    }
    // Whichever comes first: more output, or the end of a server that failed to start.
    const stop = new AbortController();
    await Promise.race([
      once(child.stdout!, "data", { signal: stop.signal }),
      once(child, "exit", { signal: stop.signal }),
    ]).catch(() => {});
    stop.abort();
  }
}

/**
 * Runs a Node script in its own process pinned to the servers' CPU (or the
 * load generator's) and returns what it printed as JSON.
 * @param args Node's arguments
 * @param cpu the servers' CPU (the default), or the load generator's, for a script that is load
 * @returns the script's output, parsed
 */
export async function runPinnedScript<T>(
  args: readonly string[],
  cpu: "server" | "client" = "server",
): Promise<T> {
  const [command, ...rest] = [
    ...(cpu === "server" ? SERVER_PIN : CLIENT_PIN),
    process.execPath,
    ...args,
  ];
  const child = spawn(command!, rest, { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`${args.join(" ")} exited with ${code}: ${output}`);
  return JSON.parse(output) as T;
}

/**
 * The median of some numbers (the upper middle one of an even count).
 * @param values the numbers, at least one
 * @returns their median
 */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/**
 * Starts a redis-server pinned to the load generator's CPU (a service beside
 * the servers, as the receiver is), on a free port, with append-only
 * persistence at Redis's default fsync (every second) in a temporary directory.
 * @returns its URL and the process
 */
export async function startPinnedRedis(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "tributary-bench-redis-"));
  const [command, ...rest] = [
    ...CLIENT_PIN,
    "redis-server",
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--appendonly",
    "yes",
    "--appendfsync",
    "everysec",
    "--save",
    "",
  ];
  const child = spawn(command!, rest, { stdio: ["ignore", "pipe", "inherit"] });
  let output = "";
  child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
  while (!output.includes("Ready to accept connections")) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${output}`);
    await Promise.race([once(child.stdout!, "data"), once(child, "exit")]);
  }
  child.once("exit", () => rmSync(dir, { recursive: true, force: true }));
  return { child, url: `redis://127.0.0.1:${port}` };
}

/**
 * Pins a running process, every thread of it, to the load generator's CPU
 * (for a service started elsewhere, such as the Kafka mock cluster).
 * @param pid the process
 */
export function pinToClientCpu(pid: number): void {
  if (PINNED) spawnSync("taskset", ["-a", "-c", "-p", "0", String(pid)], { stdio: "ignore" });
}

/**
 * CPU seconds a process has used so far (user + system), or NaN without
 * /proc.
 * @param pid the process, or "self" for this one
 * @returns its CPU seconds
 */
export function cpuSeconds(pid: number | "self"): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

/**
 * The one CPU a process is pinned to.
 * @param pid the process
 * @returns the CPU, or undefined when it may run on several (or without /proc)
 */
export function pinnedCpu(pid: number): number | undefined {
  try {
    const allowed = /^Cpus_allowed_list:\s*(\d+)$/m.exec(
      readFileSync(`/proc/${pid}/status`, "utf8"),
    );
    return allowed === null ? undefined : Number(allowed[1]);
  } catch {
    return undefined;
  }
}

/**
 * Seconds a CPU has been busy (any process, the kernel included), from os.cpus().
 * @param cpu the CPU
 * @returns its busy seconds, or NaN for a CPU there is not
 */
export function busySeconds(cpu: number): number {
  const times = cpuTimes()[cpu]?.times;
  return times === undefined
    ? Number.NaN
    : (times.user + times.nice + times.sys + times.irq) / 1000;
}

/** A turn of load on one pinned server, as {@linkcode measureTurn} measured it. */
export interface MeasuredTurn extends LoadResult {
  /** Seconds the turn took. */
  readonly seconds: number;
  /** The server's CPU seconds. */
  readonly cpu: number;
  /**
   * The share of the server's CPU or the client's that other processes took
   * (0 when the two are not pinned apart).
   */
  readonly others: number;
}

/**
 * Runs a turn of load on a pinned server (runPinnedLoad) and measures the
 * server's CPU time (from /proc) and how much of the server's CPU or the
 * client's other processes took meanwhile: the client's side is the load
 * generator and this process, which drains the servers' output (pinned
 * beside the load generator with pinToClientCpu).
 * @param server the server's process
 * @param load the request and the load
 * @returns what the load generator counted, the turn's seconds, the server's CPU seconds and the others' share
 */
export async function measureTurn(
  server: ChildProcess,
  load: LoadOptions,
): Promise<MeasuredTurn> {
  const serverCpu = pinnedCpu(server.pid!);
  const clientCpu = pinnedCpu(process.pid);
  const before = cpuSeconds(server.pid!);
  const clientSide = (): number =>
    cpuSeconds("self") + cpuSeconds(loadGeneratorPid() ?? Number.NaN);
  const clientBefore = clientSide();
  const busyBefore = [serverCpu, clientCpu].map((cpu) =>
    cpu === undefined ? Number.NaN : busySeconds(cpu)
  );
  const started = performance.now();
  const result = await runPinnedLoad(load);
  const cpu = cpuSeconds(server.pid!) - before;
  const clientUsed = clientSide() - clientBefore;
  const seconds = (performance.now() - started) / 1000;
  const others = serverCpu === undefined || clientCpu === undefined || serverCpu === clientCpu
    ? 0
    : Math.max(
      busySeconds(serverCpu) - busyBefore[0]! - cpu,
      busySeconds(clientCpu) - busyBefore[1]! - clientUsed,
    ) / seconds;
  return { ...result, seconds, cpu, others };
}
