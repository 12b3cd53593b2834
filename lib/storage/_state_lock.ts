// The lock of a state folder: a lease two processes can never both hold,
// whatever their host names (containers on a shared volume), at the same
// instant, over a stale or half-written lock.
//
// A lock is a file `LOCK.<generation>` (8 digits), written under a temporary
// name and linked into place (or made with O_EXCL where links are missing),
// so that of two processes making the same generation one alone succeeds,
// and a lock of this project is never seen half-written. The
// holder renews its lease by touching the file's time every quarter lease.
// The newest generation is the lock. Held by a process of this host, boot
// and process namespace, it is live while that process runs and stale once
// it is gone (a restart after a crash does not wait); held by any other (a
// container of another host name on a shared volume, or a process still
// writing its lock), it is live once its time is seen to move, and stale
// once seen unchanged for a whole lease: only changes this process saw are
// compared, never the clocks of two hosts. A stale lock is taken
// over by making the next generation, again with O_EXCL: of two processes
// taking one stale lock over, one alone succeeds, and the other then finds
// the new lock live. The holder checks at each renewal that no newer
// generation exists, and a write goes ahead only once such a check is
// recent (the fence), so a holder frozen past its lease stops writing.
import { readFileSync, statSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { link, open, readdir, readFile, rm, stat, utimes } from "node:fs/promises";
import { hostname } from "node:os";
import { basename, join } from "node:path";

/** Options of {@linkcode takeStateLock}. */
export interface StateLockOptions {
  /**
   * The process id written to the lock, and checked for life in a lock of this host found there.
   * @default {process.pid}
   */
  readonly pid?: number;
  /**
   * Whether a process id of this host, boot and process namespace is running.
   * @default a signal-0 probe
   */
  readonly alive?: (pid: number) => boolean;
  /**
   * What tells this host, boot and process namespace from others (tests give other ones).
   * @default host name, Linux's boot id and the inode of the process's pid namespace
   */
  readonly identity?: string;
  /**
   * How long a lock stays live without renewal, milliseconds; renewed every quarter of it.
   * @default {20000}
   */
  readonly leaseMs?: number;
  /** Monotonic clock, milliseconds. @default {() => performance.now()} */
  readonly now?: () => number;
  /** Waits, for the observation of a lock's time. @default a timer */
  readonly sleep?: (ms: number) => Promise<void>;
  /**
   * Runs the renewal every `ms`; returns a stop function.
   * @default a timer that does not keep the process alive
   */
  readonly every?: (task: () => Promise<void>, ms: number) => () => void;
}

/** What a lock file says of its holder. */
interface Holder {
  readonly pid: number;
  readonly host: string;
  readonly identity: string;
}

/** A lock held. */
export interface StateLock {
  /** The lock file, for messages. */
  readonly file: string;
  /**
   * Undefined while this process may write; else why it may not (the lease
   * lost, or unconfirmed and the renewal failing). After a long pause it
   * renews first, and answers once that is done.
   */
  fence(): Error | undefined | Promise<Error | undefined>;
  /** Stops renewing and removes the lock file (if it is still this process's). */
  release(): Promise<void>;
}

/** Why a lock cannot be taken: the holder, or the file system's error. */
export class LockRefused extends Error {
  readonly holder: Holder | undefined;
  constructor(message: string, holder: Holder | undefined) {
    super(message);
    this.name = "LockRefused";
    this.holder = holder;
  }
}

const LOCK_FILE = /^LOCK\.([0-9]{8})$/;
const LOCK_TEMPORARY = /^\.LOCK\.([0-9]{8})\.[0-9]+\.[0-9a-f]+\.tmp$/;

/** This host, boot and process namespace, as a lock file records it. */
function ownIdentity(): string {
  const read = (read: () => string): string => {
    try {
      return read();
    } catch {
      return "?";
    }
  };
  const boot = read(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim());
  const namespace = read(() => String(statSync("/proc/self/ns/pid").ino));
  return `${hostname()} ${boot} ${namespace}`;
}

function lockName(generation: number): string {
  return `LOCK.${String(generation).padStart(8, "0")}`;
}

/** The newest lock of a folder: its generation (0 for none) and file. */
async function newest(dir: string): Promise<{ generation: number; file: string | undefined }> {
  let generation = 0;
  for (const entry of await readdir(dir)) {
    const match = LOCK_FILE.exec(entry);
    if (match !== null && Number(match[1]) > generation) generation = Number(match[1]);
  }
  return { generation, file: generation === 0 ? undefined : join(dir, lockName(generation)) };
}

async function readHolder(file: string): Promise<Holder | undefined> {
  try {
    const parsed = JSON.parse(await readFile(file, "utf8")) as Partial<Holder>;
    if (
      typeof parsed.pid !== "number" || typeof parsed.host !== "string" ||
      typeof parsed.identity !== "string"
    ) return undefined;
    return { pid: parsed.pid, host: parsed.host, identity: parsed.identity };
  } catch {
    // Not there any more, or still being written: nothing said of the holder.
    return undefined;
  }
}

async function timeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).mtimeMs;
  } catch {
    return undefined;
  }
}

/**
 * Whether the lock `file` is stale. Its holder a process of this host, boot
 * and process namespace: stale when that process is gone (or is this one),
 * live while it runs, known at once. Any other holder (another host, or a
 * lock still being written): live once its time moves (it renews every
 * quarter lease), stale once seen unchanged for a whole lease. Only times
 * this process saw change are compared, never clocks of two hosts.
 */
async function isStale(
  file: string,
  options: Required<Pick<StateLockOptions, "alive" | "identity" | "leaseMs" | "now" | "sleep">>,
  pid: number,
): Promise<{ stale: boolean; holder: Holder | undefined }> {
  const holder = await readHolder(file);
  if (holder !== undefined && holder.identity === options.identity) {
    return { stale: holder.pid === pid || !options.alive(holder.pid), holder };
  }
  const first = await timeOf(file);
  if (first === undefined) return { stale: true, holder };
  const started = options.now();
  while (options.now() - started < options.leaseMs) {
    await options.sleep(
      Math.max(1, Math.min(options.leaseMs / 8, options.leaseMs - (options.now() - started))),
    );
    const seen = await timeOf(file);
    if (seen === undefined) return { stale: true, holder };
    if (seen !== first) return { stale: false, holder: (await readHolder(file)) ?? holder };
  }
  return { stale: true, holder };
}

/**
 * Takes the lock of a folder for this process, as the module's comment says.
 * @param dir the folder (it exists)
 * @param options the identity, lease and clocks
 * @returns the lock, renewed until released
 * @throws {LockRefused} when a live process holds it, or the file system refuses
 */
export async function takeStateLock(
  dir: string,
  options: StateLockOptions = {},
): Promise<StateLock> {
  const pid = options.pid ?? process.pid;
  const settings = {
    alive: options.alive ?? isAlive,
    identity: options.identity ?? ownIdentity(),
    leaseMs: options.leaseMs ?? 20_000,
    now: options.now ?? (() => performance.now()),
    sleep: options.sleep ??
      ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))),
  };
  const body = JSON.stringify({ pid, host: hostname(), identity: settings.identity });
  // Bounded: each round either takes the lock, is refused, or finds a newer generation made meanwhile.
  for (let round = 0; round < 100; round++) {
    const current = await newest(dir);
    if (current.file !== undefined) {
      const { stale, holder } = await isStale(current.file, settings, pid);
      if (!stale) {
        const who = holder === undefined
          ? "another process (whose lock is being written)"
          : `process ${holder.pid} on ${holder.host}`;
        throw new LockRefused(`is in use by ${who}`, holder);
      }
    }
    const generation = current.generation + 1;
    const file = join(dir, lockName(generation));
    // The lease counts from before the lock is made: a pause after the check below must not look like a renewal.
    const making = settings.now();
    let made: boolean;
    try {
      made = await makeLock(dir, file, body, pid);
    } catch (error) {
      throw new LockRefused(`cannot be locked: ${(error as Error).message}`, undefined);
    }
    // Another process made this generation first: look again (it is live now).
    if (!made) continue;
    // The older generations are this process's to remove now; a newer one would mean it lost at once.
    const after = await newest(dir);
    if (after.generation !== generation) {
      await rm(file, { force: true });
      continue;
    }
    // With them, what a process that crashed while making an older generation left under a temporary name.
    for (const entry of await readdir(dir)) {
      const match = LOCK_FILE.exec(entry) ?? LOCK_TEMPORARY.exec(entry);
      if (match !== null && Number(match[1]) < generation) {
        await rm(join(dir, entry), { force: true });
      }
    }
    return held(dir, file, generation, making, { ...settings, every: options.every ?? repeat });
  }
  throw new LockRefused("cannot be locked: its lock kept changing hands", undefined);
}

/**
 * Makes the lock file `file` holding `body`, unless it exists. The body is
 * written and synced under a temporary name first, then linked into place
 * (a link, like O_EXCL, fails when the name exists): a lock of this project
 * is never seen half-written, so a contender of this host judges it at once
 * by its holder's life instead of watching its time. Where the file system
 * has no hard links, the file is made with O_EXCL and written in place.
 * @returns whether this process made it
 */
async function makeLock(dir: string, file: string, body: string, pid: number): Promise<boolean> {
  const temporary = join(dir, `.${basename(file)}.${pid}.${randomBytes(4).toString("hex")}.tmp`);
  await writeSynced(temporary, "w", body);
  try {
    await link(temporary, file);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") return false;
    if (code !== "EPERM" && code !== "ENOTSUP" && code !== "EOPNOTSUPP" && code !== "EXDEV") {
      throw error;
    }
  } finally {
    await rm(temporary, { force: true });
  }
  try {
    await writeSynced(file, "wx", body);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw error;
  }
}

async function writeSynced(file: string, flags: "w" | "wx", body: string): Promise<void> {
  const handle = await open(file, flags);
  try {
    await handle.writeFile(body);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * A lock taken: renewed every quarter lease, checked for a newer generation
 * each time. Confirmed as of when a check began, never when it ended: a
 * process frozen between the check and reading its clock may have lost the
 * lock meanwhile, and must not take that late time for a confirmation.
 */
function held(
  dir: string,
  file: string,
  generation: number,
  made: number,
  settings: {
    leaseMs: number;
    now: () => number;
    every: (task: () => Promise<void>, ms: number) => () => void;
  },
): StateLock {
  let confirmed = made;
  let lost: Error | undefined;
  let renewing: Promise<void> | undefined;
  // Each renewal sets a time later than the one before (two within one millisecond still differ),
  // so that a watcher sees it move.
  let lastSet = Date.now();
  const renew = (): Promise<void> => (renewing ??= (async () => {
    const began = settings.now();
    try {
      lastSet = Math.max(Date.now(), lastSet + 1);
      const at = new Date(lastSet);
      await utimes(file, at, at);
      if ((await newest(dir)).generation !== generation) {
        lost = new Error(
          `the lock ${file} was taken over by another process while this one did not renew it`,
        );
        return;
      }
      confirmed = began;
    } catch (error) {
      // The file gone, or the disk away (then writes stop once the lease is unconfirmed too long).
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        lost = new Error(`the lock ${file} was removed by another process`);
      }
    }
  })().finally(() => (renewing = undefined)));
  const stop = settings.every(renew, Math.max(1, Math.floor(settings.leaseMs / 4)));
  // Past half a lease unconfirmed (the process was frozen, the disk away), a write confirms first.
  const recent = (): boolean => settings.now() - confirmed <= settings.leaseMs / 2;
  return {
    file,
    fence() {
      if (lost !== undefined) return lost;
      if (recent()) return undefined;
      return (async () => {
        // A renewal that took over half a lease (a slow disk, or a pause within it) confirms nothing: one more.
        for (let attempt = 0; attempt < 2; attempt++) {
          await renew();
          if (lost !== undefined) return lost;
          if (recent()) return undefined;
        }
        return new Error(
          `the lock ${file} cannot be confirmed (renewing it failed, or took over half a lease twice): another process may take it over`,
        );
      })();
    },
    async release() {
      stop();
      await renewing;
      // This generation is this process's alone (a newer one is another's): its file goes, held or lost.
      await rm(file, { force: true });
    },
  };
}

/** Runs a task every `ms` on a timer that does not keep the process alive. */
function repeat(task: () => Promise<void>, ms: number): () => void {
  const timer = setInterval(() => void task(), ms);
  timer.unref();
  return () => clearInterval(timer);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
