import { constants } from "node:fs";
import { mkdir, open, readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import {
  frame,
  LOG_FILE,
  logPath,
  readJournalFiles,
  stamp,
  truncateDurably,
  writeDurably,
} from "./_journal_files.ts";
import { type JournalDamage, MAX_RECORD, scanJournal } from "./_journal_scan.ts";
import { StorageError } from "./errors.ts";

/** Options of {@linkcode Journal.open}. */
export interface JournalOptions {
  /** The folder of the journal's files (it is created). */
  readonly dir: string;
  /** The journal's name: its files are `<name>.snapshot` and `<name>.<generation>.log`. */
  readonly name: string;
  /**
   * Log bytes past which {@linkcode Journal.shouldCompact} says yes, or
   * twice the last snapshot's size when that is more: a compaction writes
   * the whole state, so a large state is compacted less often and its cost
   * per record stays bounded.
   * @default {67108864}
   */
  readonly compactAboveBytes?: number;
  /**
   * Schedules the commit of the records appended in this turn of the event loop.
   * @default {setImmediate}
   */
  readonly defer?: (run: () => void) => void;
  /**
   * Whether a commit waits for the disk (`fdatasync`) before its appends resolve.
   * @default {true}
   */
  readonly sync?: boolean;
  /** Called after each commit with its records and bytes (for metrics). */
  readonly onCommit?: (records: number, bytes: number) => void;
  /**
   * Opens a log file for appending.
   * @default `open(path, "a+")` of `node:fs/promises`
   */
  readonly openLog?: (path: string) => Promise<LogHandle>;
  /**
   * Wall clock, milliseconds since the epoch: names the file a torn tail is kept in.
   * @default {Date.now}
   */
  readonly now?: () => number;
  /**
   * With it, a journal whose folder does not exist at open opens empty and
   * puts nothing on disk until its first commit (or compaction), which first
   * awaits this (e.g. a state folder made and locked when first needed), then
   * makes the folder and the log. Without it, the folder is made at open.
   */
  readonly beforeFirstWrite?: () => Promise<void>;
  /**
   * Asked before each commit whether this process may still write (a state
   * folder's lock, held or lost): an error breaks the journal, as a failed
   * write does. It may answer later (a lock confirming itself after a pause).
   */
  readonly fence?: () => Error | undefined | Promise<Error | undefined>;
}

/** What the journal needs of an open log file: a `FileHandle` of `node:fs/promises` is one. */
export interface LogHandle {
  write(bytes: Uint8Array, offset: number): Promise<{ bytesWritten: number }>;
  datasync(): Promise<void>;
  sync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** What a torn or damaged tail of the log lost. */
export interface DroppedTail {
  readonly file: string;
  /** Where the last whole record ends: the file was cut there. */
  readonly offset: number;
  readonly bytes: number;
  readonly reason: string;
  /** The file the cut bytes were kept in, beside the log. */
  readonly keptAt: string;
}

/**
 * Says in one line what a journal cut at open, for the log (a warning).
 * @param name the journal's name
 * @param dropped the tail it cut
 * @returns the note
 */
export function droppedTailNote(name: string, dropped: DroppedTail): string {
  return `State: the ${name} journal ${dropped.file} ended mid-record (${dropped.reason}), as a crash while writing leaves it: cut at byte ${dropped.offset}, the ${dropped.bytes} bytes after it kept in ${dropped.keptAt}; everything before it is loaded`;
}

/** What a journal held when it was opened, to rebuild the state from. */
export interface JournalReplay {
  /** The state the last compaction wrote; undefined when there was none. */
  readonly snapshot: unknown;
  /** The records appended after it, oldest first. */
  readonly records: readonly unknown[];
  /** The tail cut from the last log, when it ended mid-record; undefined when it ended cleanly. */
  readonly dropped: DroppedTail | undefined;
}

const encoder = new TextEncoder();

interface LogFile {
  readonly generation: number;
  readonly path: string;
  readonly handle: LogHandle;
}

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * An append-only journal of JSON records in one folder, for a store that
 * keeps its state in memory and must not lose an acknowledged write.
 * Records are length-prefixed and checksummed; the records appended in one
 * turn of the event loop are written and `fdatasync`'d together (a group
 * commit), and each append resolves only once its record is on disk. At
 * open, the last snapshot and the records after it are read back; a log that
 * ends mid-record (a crash while writing) is cut at its last whole record and
 * the cut is reported. Compaction writes the whole state as a snapshot and
 * starts a new log generation, without holding appends back. A write that
 * fails breaks the journal: every later append is refused with
 * `ERR_STORAGE_UNAVAILABLE`, so that memory never runs ahead of the disk
 * unnoticed.
 * @example
 * ```ts
 * const { journal, replay } = await Journal.open({ dir: "var", name: "auth" });
 * const state = rebuild(replay.snapshot, replay.records);
 * await journal.append({ op: "user", user }); // on disk when this resolves
 * if (journal.shouldCompact()) await journal.compact(() => state.toJSON());
 * ```
 */
export class Journal {
  readonly #dir: string;
  readonly #name: string;
  readonly #compactAbove: number;
  readonly #defer: (run: () => void) => void;
  readonly #sync: boolean;
  /** The log is opened with `O_DSYNC`: a write is durable when it returns, no `fdatasync` needed. */
  readonly #writeIsSync: boolean;
  readonly #onCommit: (records: number, bytes: number) => void;
  readonly #fence: (() => Error | undefined | Promise<Error | undefined>) | undefined;
  readonly #openLog: (path: string) => Promise<LogHandle>;
  readonly #beforeFirstWrite: (() => Promise<void>) | undefined;
  #file: LogFile;
  #seq: number;
  #logBytes: number;
  /** The size of the last snapshot written or read. */
  #snapshotBytes: number;
  #pending: Uint8Array[] = [];
  #waiters: Waiter[] = [];
  #scheduled = false;
  #flushing: Promise<void> | undefined;
  /** The log the next commit switches to, once it has written the old log's last frame. */
  #switching: LogFile | undefined;
  #compacting: Promise<void> | undefined;
  #broken: unknown;
  #closed = false;

  private constructor(
    options: JournalOptions,
    file: LogFile,
    seq: number,
    logBytes: number,
    snapshotBytes: number,
  ) {
    this.#dir = options.dir;
    this.#name = options.name;
    this.#compactAbove = options.compactAboveBytes ?? 64 * 1024 * 1024;
    this.#defer = options.defer ?? ((run) => setImmediate(run));
    this.#sync = options.sync ?? true;
    this.#writeIsSync = this.#sync && options.openLog === undefined;
    this.#onCommit = options.onCommit ?? (() => {});
    this.#fence = options.fence;
    this.#openLog = logOpener(options);
    this.#beforeFirstWrite = options.beforeFirstWrite;
    this.#file = file;
    this.#seq = seq;
    this.#logBytes = logBytes;
    this.#snapshotBytes = snapshotBytes;
  }

  /**
   * Opens a journal, reading back what it holds. A torn tail (the end of
   * the last log holding no whole record, with none after it: a crash while
   * writing) is cut, its bytes kept beside the log as `<log>.torn-<time>`,
   * and reported in `replay.dropped`. Anything else that does not read back
   * (a bad stretch with records after it, a snapshot that cannot be read, a
   * missing log, records out of sequence) is damage: nothing is changed on
   * disk and the open fails, naming the file, the byte and the records that
   * cutting there would lose ({@linkcode repairJournal} keeps them).
   * @param options the folder, the name and the commit policy
   * @returns the journal, ready for appends, and what it held
   * @throws {StorageError} `ERR_STORAGE_CORRUPT` when the journal is damaged
   */
  static async open(options: JournalOptions): Promise<{ journal: Journal; replay: JournalReplay }> {
    const prepare = options.beforeFirstWrite;
    if (prepare !== undefined && !(await folderExists(options.dir))) {
      // Nothing to read back, and nothing written until there is something to write.
      const path = logPath(options.dir, options.name, 1);
      const handle = deferredLog(async () => {
        await prepare();
        await mkdir(options.dir, { recursive: true });
        const opened = await logOpener(options)(path);
        // The new log's entry in its folder on disk before the first record counts as durable,
        // and a snapshot naming it (no state), so that the log deleted later is noticed.
        await syncFolder(options.dir);
        await writeDurably(
          join(options.dir, `${options.name}.snapshot`),
          frame(encoder.encode(JSON.stringify({ seq: 0, generation: 1 }))),
          options.dir,
        );
        return opened;
      });
      return {
        journal: new Journal(options, { generation: 1, path, handle }, 0, 0, 0),
        replay: { snapshot: undefined, records: [], dropped: undefined },
      };
    }
    await mkdir(options.dir, { recursive: true });
    const files = await readJournalFiles(options.dir, options.name);
    const scan = scanJournal(
      files.snapshot,
      files.logs,
      (generation) => logPath(options.dir, options.name, generation),
    );
    const damage = scan.damage[0];
    if (damage !== undefined) throw damagedError(options.name, scan.damage);
    let dropped: DroppedTail | undefined;
    if (scan.torn !== undefined) {
      const torn = scan.torn;
      const log = files.logs.find((file) => file.path === torn.file)!;
      const keptAt = `${torn.file}.torn-${stamp((options.now ?? Date.now)())}`;
      await writeDurably(keptAt, log.bytes.subarray(torn.offset), options.dir);
      dropped = {
        file: torn.file,
        offset: torn.offset,
        bytes: torn.bytes,
        reason: torn.reason,
        keptAt,
      };
    }
    const last = scan.logs[scan.logs.length - 1];
    const generation = last?.generation ?? scan.generation ?? 1;
    const path = last?.path ?? logPath(options.dir, options.name, generation);
    const handle = await logOpener(options)(path);
    if (dropped !== undefined && dropped.file === path) {
      await handle.truncate(dropped.offset);
      await handle.sync();
    } else if (dropped !== undefined) {
      // A torn tail in a log before an empty last one (a compaction's new log).
      await truncateDurably(dropped.file, dropped.offset);
    }
    let logBytes = 0;
    for (const log of scan.logs) logBytes += log.size;
    if (dropped !== undefined) logBytes -= dropped.bytes;
    let snapshotBytes = files.snapshot?.bytes.length ?? 0;
    // A journal without a snapshot gets one that names its log, so that a log deleted later is noticed.
    if (!scan.hasSnapshot) {
      const marker = frame(
        encoder.encode(
          JSON.stringify({ seq: 0, generation: scan.logs[0]?.generation ?? generation }),
        ),
      );
      await writeDurably(join(options.dir, `${options.name}.snapshot`), marker, options.dir);
      snapshotBytes = marker.length;
    }
    return {
      journal: new Journal(
        options,
        { generation, path, handle },
        scan.seq,
        logBytes,
        snapshotBytes,
      ),
      replay: { snapshot: scan.snapshot, records: scan.records, dropped },
    };
  }

  /** Bytes in the logs since the last compaction. */
  get logBytes(): number {
    return this.#logBytes;
  }

  /** Whether the logs have grown past `compactAboveBytes` (or twice the last snapshot) since the last compaction. */
  shouldCompact(): boolean {
    return this.#compacting === undefined &&
      this.#logBytes > Math.max(this.#compactAbove, 2 * this.#snapshotBytes);
  }

  /**
   * Appends a record; resolves once it is on disk with the others of its commit.
   * @param record anything `JSON.stringify` writes
   * @returns a promise resolved when the record is durable
   * @throws {StorageError} `ERR_STORAGE_UNAVAILABLE` (as a rejection) once a write has failed, or after close
   */
  append(record: unknown): Promise<void> {
    if (this.#broken !== undefined) return Promise.reject(this.#unavailable(this.#broken));
    if (this.#closed) {
      return Promise.reject(
        new StorageError(
          "ERR_STORAGE_UNAVAILABLE",
          `Cannot write to the ${this.#name} journal: it is closed`,
        ),
      );
    }
    const payload = encoder.encode(JSON.stringify({ s: ++this.#seq, r: record }));
    if (payload.length > MAX_RECORD) {
      this.#seq--;
      return Promise.reject(
        new RangeError(
          `Cannot append to the ${this.#name} journal: a record of ${payload.length} bytes is over ${MAX_RECORD}`,
        ),
      );
    }
    this.#pending.push(frame(payload));
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        this.#defer(() => {
          this.#scheduled = false;
          void this.#flush();
        });
      }
    });
  }

  /**
   * Writes `capture()` as the snapshot and starts a new log generation; the
   * old logs are removed once the snapshot is on disk. Appends go on
   * meanwhile, into the new log.
   * @param capture gives the whole state, synchronously: it must hold every record appended so far
   * @returns a promise resolved when the snapshot is durable and the old logs are gone
   */
  compact(capture: () => unknown): Promise<void> {
    this.#compacting ??= this.#compact(capture).finally(() => (this.#compacting = undefined));
    return this.#compacting;
  }

  /** Commits what is pending and closes the log; later appends are refused. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.#compacting?.catch(() => {});
    await this.#flush();
    this.#closed = true;
    await this.#file.handle.close();
  }

  async #compact(capture: () => unknown): Promise<void> {
    // A journal opened before its folder existed: the folder made first (its first commit does that too).
    await this.#beforeFirstWrite?.();
    await mkdir(this.#dir, { recursive: true });
    const old = this.#file;
    const generation = old.generation + 1;
    const path = logPath(this.#dir, this.#name, generation);
    const handle = await this.#openLog(path);
    // From here, synchronously: the records appended later go to the new log (the next commit switches,
    // after writing the old log's last frame, which names the new log), and the state holds every earlier one.
    this.#switching = { generation, path, handle };
    const seq = this.#seq;
    let state: unknown;
    try {
      state = capture();
    } finally {
      // A commit still writing to the old log holds only records the state has; the switch follows it.
      while (this.#switching !== undefined) await this.#flush();
      await old.handle.close();
    }
    this.#logBytes = 0;
    const snapshotPath = join(this.#dir, `${this.#name}.snapshot`);
    const snapshot = frame(encoder.encode(JSON.stringify({ seq, generation, state })));
    this.#snapshotBytes = snapshot.length;
    await this.#fenced();
    await writeDurably(snapshotPath, snapshot, this.#dir);
    for (const entry of await readdir(this.#dir)) {
      const match = LOG_FILE.exec(entry);
      if (match !== null && match[1] === this.#name && Number(match[2]) < generation) {
        await rm(join(this.#dir, entry), { force: true });
      }
    }
  }

  #flush(): Promise<void> {
    this.#flushing ??= this.#commitAll().finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  async #commitAll(): Promise<void> {
    while (this.#pending.length > 0 || this.#switching !== undefined) {
      const next = this.#switching;
      if (next !== undefined) {
        this.#switching = undefined;
        // The old log's last frame names the log that follows it, so that losing that log is noticed.
        if (this.#broken === undefined) {
          try {
            await this.#writeAll(
              this.#file,
              frame(encoder.encode(JSON.stringify({ next: next.generation }))),
            );
          } catch (error) {
            this.#broken = error;
          }
        }
        this.#file = next;
        continue;
      }
      const batch = concat(this.#pending);
      const waiters = this.#waiters;
      this.#pending = [];
      this.#waiters = [];
      if (this.#broken !== undefined) {
        for (const waiter of waiters) waiter.reject(this.#unavailable(this.#broken));
        continue;
      }
      try {
        await this.#writeAll(this.#file, batch);
      } catch (error) {
        this.#broken = error;
        for (const waiter of waiters) waiter.reject(this.#unavailable(error));
        continue;
      }
      this.#logBytes += batch.length;
      this.#onCommit(waiters.length, batch.length);
      for (const waiter of waiters) waiter.resolve();
    }
  }

  /** Throws the fence's refusal, if it has one. */
  async #fenced(): Promise<void> {
    const fenced = this.#fence?.();
    const refusal = fenced instanceof Promise ? await fenced : fenced;
    if (refusal !== undefined) throw refusal;
  }

  /** Writes bytes at the end of a log and waits for the disk; refused when the fence says this process may not write. */
  async #writeAll(file: LogFile, bytes: Uint8Array): Promise<void> {
    await this.#fenced();
    let written = 0;
    while (written < bytes.length) {
      written += (await file.handle.write(bytes, written)).bytesWritten;
    }
    if (this.#sync && !this.#writeIsSync) await file.handle.datasync();
  }

  #unavailable(cause: unknown): StorageError {
    const why = cause instanceof Error ? cause.message : String(cause);
    return new StorageError(
      "ERR_STORAGE_UNAVAILABLE",
      `Cannot write to the ${this.#name} journal in ${this.#dir}: ${why}; restart once the disk is fixed`,
      { cause },
    );
  }
}

/** The error of a damaged journal: where, why, and what cutting there would lose. */
function damagedError(name: string, damage: readonly JournalDamage[]): StorageError {
  const first = damage[0]!;
  const where = first.bytes === 0 && first.offset === 0
    ? first.file
    : `${first.file} at byte ${first.offset}`;
  const loss = first.recordsAfter > 0
    ? `; cutting there would lose the ${first.recordsAfter} whole records after it`
    : "";
  const more = damage.length > 1
    ? ` (and ${damage.length - 1} more damaged place${damage.length > 2 ? "s" : ""})`
    : "";
  return new StorageError(
    "ERR_STORAGE_CORRUPT",
    `Cannot open the ${name} journal: ${where} is damaged (${first.reason})${loss}${more}; nothing was changed. ` +
      "`npx tributary state check` reports every journal; `npx tributary state repair` keeps every whole record and moves the damaged files aside",
  );
}

/** How a journal opens its logs: as the options say, else with `O_DSYNC` when commits wait for the disk. */
function logOpener(options: JournalOptions): (path: string) => Promise<LogHandle> {
  return options.openLog ?? ((options.sync ?? true) ? openForSyncedAppend : openForAppend);
}

function openForAppend(path: string): Promise<LogHandle> {
  return open(path, "a+");
}

/**
 * Opens a log file for appending with `O_DSYNC`: each write returns once its
 * bytes are on disk, so a commit is one trip to the thread pool, not two
 * (a write, then an `fdatasync`).
 */
function openForSyncedAppend(path: string): Promise<LogHandle> {
  return open(
    path,
    constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC,
    0o644,
  );
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let size = 0;
  for (const part of parts) size += part.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

async function syncFolder(dir: string): Promise<void> {
  const folder = await open(dir, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}

async function folderExists(dir: string): Promise<boolean> {
  try {
    await stat(dir);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}

/**
 * A log opened at its first write: until then, nothing on disk. A failed
 * opening fails that write (and so breaks the journal, as a failed write does).
 */
function deferredLog(openLog: () => Promise<LogHandle>): LogHandle {
  let opening: Promise<LogHandle> | undefined;
  const opened = (): Promise<LogHandle> => (opening ??= openLog());
  return {
    write: async (bytes, offset) => (await opened()).write(bytes, offset),
    datasync: async () => (await opened()).datasync(),
    sync: async () => (await opened()).sync(),
    truncate: async (length) => (await opened()).truncate(length),
    close: async () => {
      // Never written: nothing to close, and nothing made.
      if (opening !== undefined) await (await opening.catch(() => undefined))?.close();
    },
  };
}
