// The real server as a child process, for tests that start, kill and restart it.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { after } from "node:test";
import { listeningLine } from "./listening.ts";

const ROOT = join(import.meta.dirname, "..", "..");

/** A started `server.ts`. */
export interface Started {
  readonly child: ChildProcess;
  /** Its standard output so far, as text: each whole log line's message (see {@linkcode logText}). */
  readonly output: () => string;
  /** Its standard error so far, as text likewise. */
  readonly errors: () => string;
  /** Its standard output and error as written (JSON log lines). */
  readonly raw: () => { readonly out: string; readonly err: string };
}

/**
 * The text of a run's log: each whole JSON log line as its `msg` (and its
 * error's message after `: `), other lines as they are; a line not yet whole
 * is left out, so that the text only ever grows.
 * @param written what the process wrote
 * @returns one line per log line
 */
export function logText(written: string): string {
  const end = written.lastIndexOf("\n");
  if (end === -1) return "";
  let text = "";
  for (const line of written.slice(0, end).split("\n")) {
    let shown = line;
    if (line.startsWith("{")) {
      try {
        const record = JSON.parse(line) as { msg?: unknown; err?: { message?: unknown } };
        if (typeof record.msg === "string") {
          shown = record.err === undefined
            ? record.msg
            : `${record.msg}: ${String(record.err.message)}`;
        }
      } catch {
        // Not a log line: as written.
      }
    }
    text += `${shown}\n`;
  }
  return text;
}

const children: ChildProcess[] = [];
after(() => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

/**
 * Starts `server.ts` with `env` over a bare environment: port 0, state in
 * memory (give STATE_DIR to keep it). Whatever is still running when the test file ends is killed.
 * @param env variables to set
 * @param options `via`: a command to run it under (its arguments then the node command line)
 * @returns the child and its output
 */
export function startServer(
  env: Record<string, string>,
  options: { readonly via?: readonly string[] } = {},
): Started {
  // `via`: a command the server runs under, given the node command line as its arguments (e.g. unshare).
  const [command, ...args] = [
    ...(options.via ?? []),
    process.execPath,
    "--import",
    "tsx",
    "server.ts",
  ];
  const child = spawn(command!, args, {
    cwd: ROOT,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "",
      PORT: "0",
      STATE_DIR: "",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  return {
    child,
    output: () => logText(out),
    errors: () => logText(err),
    raw: () => ({ out, err }),
  };
}

/**
 * Waits for the server's machine-readable listening line (printed once every
 * service has started) and returns the URL it gives.
 * @throws {Error} with the server's errors when it exits first
 */
export async function listeningUrl(started: Started): Promise<string> {
  for (;;) {
    const url = listeningLine(started.raw().out);
    if (url !== undefined) return url;
    if (started.child.exitCode !== null || started.child.signalCode !== null) {
      throw new Error(`server exited: ${started.errors()}`);
    }
    const stop = new AbortController();
    await Promise.race([
      once(started.child.stdout!, "data", { signal: stop.signal }),
      once(started.child, "exit", { signal: stop.signal }),
    ]).catch(() => {});
    stop.abort();
  }
}
