import { mkdir, open, readdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { ConfigError } from "../config/mod.ts";
import { LockRefused, type StateLock, takeStateLock } from "./_state_lock.ts";
import { Journal, type JournalOptions, type JournalReplay } from "./journal.ts";

/** Options of {@linkcode openStateDir}. */
export interface StateDirOptions {
  /**
   * The process id written to the lock, and checked for life in a lock found there.
   * @default {process.pid}
   */
  readonly pid?: number;
  /**
   * Whether a process id of this host, boot and process namespace is running.
   * @default a signal-0 probe
   */
  readonly alive?: (pid: number) => boolean;
  /**
   * What tells this host, boot and process namespace from others, in the
   * lock: only a holder of the same one is checked with `alive`.
   * @default host name, Linux's boot id and the pid namespace's inode
   */
  readonly identity?: string;
  /**
   * How long the lock stays live without renewal, milliseconds (renewed
   * every quarter of it): a lock of a process of another host, or one that
   * stopped renewing, is taken over only after it was seen unchanged this long.
   * @default {20000}
   */
  readonly leaseMs?: number;
  /** Monotonic clock, milliseconds, of the lease. @default {() => performance.now()} */
  readonly now?: () => number;
  /** Waits while a lock's time is watched. @default a timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /** Runs the lock's renewal every `ms`; returns a stop function. @default a timer that does not keep the process alive */
  readonly every?: (task: () => Promise<void>, ms: number) => () => void;
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
  journal(
    name: string,
    options?: Omit<JournalOptions, "dir" | "name" | "beforeFirstWrite" | "fence">,
  ): Promise<{ journal: Journal; replay: JournalReplay }>;
  /**
   * Makes and locks the folder, if that is not done yet (opened `lazily`);
   * resolves once this process holds it.
   * @throws {ConfigError} naming STATE_DIR when it cannot be made or locked, or another process made it meanwhile
   */
  hold(): Promise<void>;
  /** Releases the lock (if it was taken); the journals must be closed first. */
  close(): Promise<void>;
}

/**
 * Takes a state folder (`STATE_DIR`) for this process: creates it, and holds
 * its lock, so that a second process pointed at the same folder is refused
 * instead of interleaving writes, whatever its host name (containers on a
 * shared volume), even when both start at once over a stale or half-written
 * lock. The lock is a lease (`LOCK.<generation>`, written aside and linked
 * into place, renewed by the holder): a lock left by a process that is gone
 * is taken over by making the next generation, at once for a process of
 * this host that is no longer running, else once it has gone unrenewed for
 * `leaseMs`; its journals stop writing if this process loses it. Opened
 * `lazily`, a folder that does not exist is made and locked only when first
 * needed.
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
  let lock: StateLock | undefined;
  // A journal writes only while this process holds the lock.
  const fence = ():
    | Error
    | undefined
    | Promise<Error | undefined> => (lock === undefined ? undefined : lock.fence());
  const release = async (): Promise<void> => {
    const held = lock;
    lock = undefined;
    await held?.release();
  };
  if (options.lazily !== true || !(await missing(absolute))) {
    await mkdirOrRefuse(absolute);
    lock = await takeLock(absolute, options);
    return {
      dir: absolute,
      journal: (name, journalOptions = {}) =>
        Journal.open({ ...journalOptions, dir: absolute, name, fence }),
      hold: () => Promise.resolve(),
      close: release,
    };
  }
  // Not there yet: made and locked by the first hold(), a journal's first write or the app's listen.
  const opened = new Set<string>();
  let held: Promise<void> | undefined;
  const hold = (): Promise<void> => (held ??= holdLater(absolute, opened, options).then((taken) => {
    lock = taken;
  }));
  return {
    dir: absolute,
    journal: async (name, journalOptions = {}) => {
      // Held already: the folder is there, and its journals are read as usual.
      if (held === undefined) opened.add(name);
      return Journal.open({
        ...journalOptions,
        dir: absolute,
        name,
        beforeFirstWrite: hold,
        fence,
      });
    },
    hold,
    close: async () => {
      await held?.catch(() => {});
      await release();
    },
  };
}

/**
 * Makes the folder of a state folder opened lazily, and locks it. A folder
 * that another process made since, with journals this one opened empty, is
 * refused: its records would be appended to unread.
 */
async function holdLater(
  absolute: string,
  opened: ReadonlySet<string>,
  options: StateDirOptions,
): Promise<StateLock> {
  await mkdirOrRefuse(absolute);
  const lock = await takeLock(absolute, options);
  const unread = (await readdir(absolute)).filter((entry) =>
    [...opened].some((name) => entry.startsWith(`${name}.`))
  );
  if (unread.length > 0) {
    await lock.release();
    throw new ConfigError(
      "STATE_DIR",
      `Cannot write to STATE_DIR ${absolute}: it was made after this process started, with journals it did not read (${
        unread.sort().join(", ")
      }); restart it`,
    );
  }
  // The new folder's entry, and the lock's, on disk before the first journal's.
  await syncFolder(dirname(absolute));
  await syncFolder(absolute);
  return lock;
}

async function mkdirOrRefuse(absolute: string): Promise<void> {
  try {
    await mkdir(absolute, { recursive: true });
  } catch (error) {
    throw new ConfigError(
      "STATE_DIR",
      `Cannot start: STATE_DIR ${absolute} cannot be created: ${(error as Error).message}`,
    );
  }
}

async function takeLock(absolute: string, options: StateDirOptions): Promise<StateLock> {
  try {
    return await takeStateLock(absolute, {
      ...(options.pid === undefined ? {} : { pid: options.pid }),
      ...(options.alive === undefined ? {} : { alive: options.alive }),
      ...(options.identity === undefined ? {} : { identity: options.identity }),
      ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
      ...(options.now === undefined ? {} : { now: options.now }),
      ...(options.sleep === undefined ? {} : { sleep: options.sleep }),
      ...(options.every === undefined ? {} : { every: options.every }),
    });
  } catch (error) {
    if (!(error instanceof LockRefused)) throw error;
    const advice = error.message.startsWith("is in use")
      ? "; give each process its own STATE_DIR, or share state through DATABASE_URL"
      : "";
    throw new ConfigError(
      "STATE_DIR",
      `Cannot start: STATE_DIR ${absolute} ${error.message}${advice}`,
    );
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
