import { mkdir, open, readFile, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { join, resolve } from "node:path";
import { ConfigError } from "../config/mod.ts";
import { Journal, type JournalOptions, type JournalReplay } from "./journal.ts";

/** Options of {@linkcode openStateDir}. */
export interface StateDirOptions {
  /**
   * The process id written to the lock, and checked for life in a lock found there.
   * @default {process.pid}
   */
  readonly pid?: number;
  /**
   * Whether a process id is alive on this host.
   * @default a signal-0 probe
   */
  readonly alive?: (pid: number) => boolean;
}

/** A state folder this process holds: the journals of its stores, and the lock that keeps other processes out. */
export interface StateDir {
  /** The folder, absolute. */
  readonly dir: string;
  /**
   * Opens a journal in the folder.
   * @param name the journal's name, e.g. `auth`
   * @param options its commit policy
   */
  journal(name: string, options?: Omit<JournalOptions, "dir" | "name">): Promise<{ journal: Journal; replay: JournalReplay }>;
  /** Releases the lock; the journals must be closed first. */
  close(): Promise<void>;
}

const LOCK = "LOCK";

/**
 * Takes a state folder (`STATE_DIR`) for this process: creates it, and holds
 * a lock file naming this process, so that a second process pointed at the
 * same folder is refused instead of interleaving writes. A lock left by a
 * process that is gone (a crash, `SIGKILL`) is taken over.
 * @param dir the folder
 * @param options the process id and liveness probe (tests)
 * @returns the folder, held
 * @throws {ConfigError} naming STATE_DIR when a live process holds it, or it cannot be created
 * @example
 * ```ts
 * const state = await openStateDir("var");
 * const { journal, replay } = await state.journal("auth");
 * ```
 */
export async function openStateDir(dir: string, options: StateDirOptions = {}): Promise<StateDir> {
  const absolute = resolve(dir);
  const pid = options.pid ?? process.pid;
  const alive = options.alive ?? isAlive;
  const host = hostname();
  const lock = join(absolute, LOCK);
  try {
    await mkdir(absolute, { recursive: true });
  } catch (error) {
    throw new ConfigError("STATE_DIR", `Cannot start: STATE_DIR ${absolute} cannot be created: ${(error as Error).message}`);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const handle = await open(lock, "wx");
      try {
        await handle.writeFile(JSON.stringify({ pid, host }));
        await handle.sync();
      } finally {
        await handle.close();
      }
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 0) {
        throw new ConfigError("STATE_DIR", `Cannot start: cannot lock STATE_DIR ${absolute}: ${(error as Error).message}`);
      }
    }
    const holder = await readHolder(lock);
    if (holder !== undefined && holder.host === host && holder.pid !== pid && alive(holder.pid)) {
      throw new ConfigError(
        "STATE_DIR",
        `Cannot start: STATE_DIR ${absolute} is in use by process ${holder.pid}; give each process its own STATE_DIR, or share state through DATABASE_URL`,
      );
    }
    // The holder is gone (or was this process): its lock is stale.
    await rm(lock, { force: true });
  }
  return {
    dir: absolute,
    journal: (name, journalOptions = {}) => Journal.open({ ...journalOptions, dir: absolute, name }),
    close: () => rm(lock, { force: true }),
  };
}

async function readHolder(lock: string): Promise<{ pid: number; host: string } | undefined> {
  try {
    const parsed = JSON.parse(await readFile(lock, "utf8")) as { pid?: unknown; host?: unknown };
    return typeof parsed.pid === "number" && typeof parsed.host === "string" ? { pid: parsed.pid, host: parsed.host } : undefined;
  } catch {
    return undefined;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
