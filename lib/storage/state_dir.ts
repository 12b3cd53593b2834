import { mkdir, open, readdir, readFile, rm, stat } from "node:fs/promises";
import { hostname } from "node:os";
import { dirname, join, resolve } from "node:path";
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
  /**
   * Whether a folder that does not exist yet is made and locked only when
   * first needed, by {@linkcode StateDir.hold} or the first write of one of
   * its journals (which open empty meanwhile), so that a process that never
   * writes leaves nothing behind. A folder that exists is locked at once.
   * @default {false}
   */
  readonly lazily?: boolean;
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
  journal(name: string, options?: Omit<JournalOptions, "dir" | "name" | "beforeFirstWrite">): Promise<{ journal: Journal; replay: JournalReplay }>;
  /**
   * Makes and locks the folder, if that is not done yet (opened `lazily`);
   * resolves once this process holds it.
   * @throws {ConfigError} naming STATE_DIR when it cannot be made or locked, or another process made it meanwhile
   */
  hold(): Promise<void>;
  /** Releases the lock (if it was taken); the journals must be closed first. */
  close(): Promise<void>;
}

const LOCK = "LOCK";

/**
 * Takes a state folder (`STATE_DIR`) for this process: creates it, and holds
 * a lock file naming this process, so that a second process pointed at the
 * same folder is refused instead of interleaving writes. A lock left by a
 * process that is gone (a crash, `SIGKILL`) is taken over. Opened `lazily`,
 * a folder that does not exist is made and locked only when first needed.
 * @param dir the folder
 * @param options the process id and liveness probe (tests), and whether to make the folder lazily
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
  const lock = join(absolute, LOCK);
  const journal: StateDir["journal"] = (name, journalOptions = {}) => Journal.open({ ...journalOptions, dir: absolute, name });
  if (options.lazily !== true || !(await missing(absolute))) {
    await mkdirOrRefuse(absolute);
    await takeLock(absolute, options);
    return { dir: absolute, journal, hold: () => Promise.resolve(), close: () => rm(lock, { force: true }) };
  }
  // Not there yet: made and locked by the first hold(), a journal's first write or the app's listen.
  const opened = new Set<string>();
  let held: Promise<void> | undefined;
  const hold = (): Promise<void> => (held ??= holdLater(absolute, opened, options));
  return {
    dir: absolute,
    journal: async (name, journalOptions = {}) => {
      // Held already: the folder is there, and its journals are read as usual.
      if (held === undefined) opened.add(name);
      return Journal.open({ ...journalOptions, dir: absolute, name, beforeFirstWrite: hold });
    },
    hold,
    close: async () => {
      if (held !== undefined && (await held.then(() => true, () => false))) await rm(lock, { force: true });
    },
  };
}

/**
 * Makes the folder of a state folder opened lazily, and locks it. A folder
 * that another process made since, with journals this one opened empty, is
 * refused: its records would be appended to unread.
 */
async function holdLater(absolute: string, opened: ReadonlySet<string>, options: StateDirOptions): Promise<void> {
  await mkdirOrRefuse(absolute);
  await takeLock(absolute, options);
  const unread = (await readdir(absolute)).filter((entry) => [...opened].some((name) => entry.startsWith(`${name}.`)));
  if (unread.length > 0) {
    await rm(join(absolute, LOCK), { force: true });
    throw new ConfigError("STATE_DIR", `Cannot write to STATE_DIR ${absolute}: it was made after this process started, with journals it did not read (${unread.sort().join(", ")}); restart it`);
  }
  // The new folder's entry, and the lock's, on disk before the first journal's.
  await syncFolder(dirname(absolute));
  await syncFolder(absolute);
}

async function mkdirOrRefuse(absolute: string): Promise<void> {
  try {
    await mkdir(absolute, { recursive: true });
  } catch (error) {
    throw new ConfigError("STATE_DIR", `Cannot start: STATE_DIR ${absolute} cannot be created: ${(error as Error).message}`);
  }
}

async function takeLock(absolute: string, options: StateDirOptions): Promise<void> {
  const pid = options.pid ?? process.pid;
  const alive = options.alive ?? isAlive;
  const host = hostname();
  const lock = join(absolute, LOCK);
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
}

/** Whether a path is not there; one that cannot be looked at is taken as there, for the folder's making to say why. */
async function missing(path: string): Promise<boolean> {
  try {
    await stat(path);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "ENOENT";
  }
}

async function syncFolder(path: string): Promise<void> {
  const folder = await open(path, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
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
