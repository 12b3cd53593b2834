import { constants } from "node:fs";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "./_crc32.ts";
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
}

/**
 * Says in one line what a journal cut at open, for the log.
 * @param name the journal's name
 * @param dropped the tail it cut
 * @returns the note
 */
export function droppedTailNote(name: string, dropped: DroppedTail): string {
  return `State: the ${name} journal ${dropped.file} ended mid-record (${dropped.reason}): cut at byte ${dropped.offset}, ${dropped.bytes} bytes dropped; everything before it is loaded`;
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

const HEADER = 8;
const MAX_RECORD = 256 * 1024 * 1024;
const LOG_FILE = /^(.+)\.([0-9]{8})\.log$/;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

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
  readonly #openLog: (path: string) => Promise<LogHandle>;
  #file: LogFile;
  #seq: number;
  #logBytes: number;
  /** The size of the last snapshot written or read. */
  #snapshotBytes: number;
  #pending: Uint8Array[] = [];
  #waiters: Waiter[] = [];
  #scheduled = false;
  #flushing: Promise<void> | undefined;
  #compacting: Promise<void> | undefined;
  #broken: unknown;
  #closed = false;

  private constructor(options: JournalOptions, file: LogFile, seq: number, logBytes: number, snapshotBytes: number) {
    this.#dir = options.dir;
    this.#name = options.name;
    this.#compactAbove = options.compactAboveBytes ?? 64 * 1024 * 1024;
    this.#defer = options.defer ?? ((run) => setImmediate(run));
    this.#sync = options.sync ?? true;
    this.#writeIsSync = this.#sync && options.openLog === undefined;
    this.#onCommit = options.onCommit ?? (() => {});
    this.#openLog = logOpener(options);
    this.#file = file;
    this.#seq = seq;
    this.#logBytes = logBytes;
    this.#snapshotBytes = snapshotBytes;
  }

  /**
   * Opens a journal, reading back what it holds.
   * @param options the folder, the name and the commit policy
   * @returns the journal, ready for appends, and what it held
   * @throws {StorageError} `ERR_STORAGE_CORRUPT` when the snapshot, or a log other than the last, is damaged
   */
  static async open(options: JournalOptions): Promise<{ journal: Journal; replay: JournalReplay }> {
    await mkdir(options.dir, { recursive: true });
    const snapshotPath = join(options.dir, `${options.name}.snapshot`);
    let snapshot: unknown;
    let floor = 0;
    const snapshotBytes = await readIfExists(snapshotPath);
    if (snapshotBytes !== undefined) {
      const frames = readFrames(snapshotBytes);
      const payload = frames.payloads[0];
      if (frames.error !== undefined || payload === undefined || frames.payloads.length !== 1) {
        throw new StorageError("ERR_STORAGE_CORRUPT", `Cannot read ${snapshotPath}: ${frames.error ?? "it does not hold one record"}`);
      }
      const parsed = payload as { seq?: unknown; state?: unknown };
      if (typeof parsed.seq !== "number") throw new StorageError("ERR_STORAGE_CORRUPT", `Cannot read ${snapshotPath}: it has no sequence number`);
      snapshot = parsed.state;
      floor = parsed.seq;
    }
    const logs = (await readdir(options.dir))
      .map((entry) => LOG_FILE.exec(entry))
      .filter((match): match is RegExpExecArray => match !== null && match[1] === options.name)
      .map((match) => ({ generation: Number(match[2]), path: join(options.dir, match[0]) }))
      .sort((a, b) => a.generation - b.generation);
    const records: unknown[] = [];
    let seq = floor;
    let dropped: DroppedTail | undefined;
    let logBytes = 0;
    for (const [i, log] of logs.entries()) {
      const bytes = (await readIfExists(log.path)) ?? new Uint8Array(0);
      const frames = readFrames(bytes);
      if (frames.error !== undefined) {
        if (i !== logs.length - 1) {
          throw new StorageError("ERR_STORAGE_CORRUPT", `Cannot read ${log.path}: ${frames.error} at byte ${frames.end}, and later logs follow it`);
        }
        dropped = { file: log.path, offset: frames.end, bytes: bytes.length - frames.end, reason: frames.error };
      }
      for (const payload of frames.payloads) {
        const entry = payload as { s?: unknown; r?: unknown };
        if (typeof entry.s !== "number") throw new StorageError("ERR_STORAGE_CORRUPT", `Cannot read ${log.path}: a record has no sequence number`);
        // Records a snapshot already holds (a compaction that crashed before removing its old log) are skipped.
        if (entry.s <= seq) continue;
        seq = entry.s;
        records.push(entry.r);
      }
      logBytes += frames.end;
    }
    const last = logs[logs.length - 1];
    const generation = last?.generation ?? 1;
    const path = last?.path ?? logPath(options.dir, options.name, generation);
    const handle = await logOpener(options)(path);
    if (dropped !== undefined) {
      await handle.truncate(dropped.offset);
      await handle.sync();
    }
    // Logs older than the one appended to hold nothing the snapshot lacks, or they are read above in order.
    return {
      journal: new Journal(options, { generation, path, handle }, seq, logBytes, snapshotBytes?.length ?? 0),
      replay: { snapshot, records, dropped },
    };
  }

  /** Bytes in the logs since the last compaction. */
  get logBytes(): number {
    return this.#logBytes;
  }

  /** Whether the logs have grown past `compactAboveBytes` (or twice the last snapshot) since the last compaction. */
  shouldCompact(): boolean {
    return this.#compacting === undefined && this.#logBytes > Math.max(this.#compactAbove, 2 * this.#snapshotBytes);
  }

  /**
   * Appends a record; resolves once it is on disk with the others of its commit.
   * @param record anything `JSON.stringify` writes
   * @returns a promise resolved when the record is durable
   * @throws {StorageError} `ERR_STORAGE_UNAVAILABLE` (as a rejection) once a write has failed, or after close
   */
  append(record: unknown): Promise<void> {
    if (this.#broken !== undefined) return Promise.reject(this.#unavailable(this.#broken));
    if (this.#closed) return Promise.reject(new StorageError("ERR_STORAGE_UNAVAILABLE", `Cannot write to the ${this.#name} journal: it is closed`));
    const payload = encoder.encode(JSON.stringify({ s: ++this.#seq, r: record }));
    if (payload.length > MAX_RECORD) {
      this.#seq--;
      return Promise.reject(new RangeError(`Cannot append to the ${this.#name} journal: a record of ${payload.length} bytes is over ${MAX_RECORD}`));
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
    const generation = this.#file.generation + 1;
    const path = logPath(this.#dir, this.#name, generation);
    const handle = await this.#openLog(path);
    // From here, synchronously: the new log takes every later record, and the state holds every earlier one.
    const old = this.#file;
    this.#file = { generation, path, handle };
    const seq = this.#seq;
    const state = capture();
    this.#logBytes = 0;
    const snapshotPath = join(this.#dir, `${this.#name}.snapshot`);
    const snapshot = frame(encoder.encode(JSON.stringify({ seq, state })));
    this.#snapshotBytes = snapshot.length;
    await writeDurably(snapshotPath, snapshot, this.#dir);
    // A commit still writing to the old log holds only records the snapshot has.
    await this.#flushing;
    await old.handle.close();
    for (const entry of await readdir(this.#dir)) {
      const match = LOG_FILE.exec(entry);
      if (match !== null && match[1] === this.#name && Number(match[2]) < generation) await rm(join(this.#dir, entry), { force: true });
    }
  }

  #flush(): Promise<void> {
    this.#flushing ??= this.#commitAll().finally(() => (this.#flushing = undefined));
    return this.#flushing;
  }

  async #commitAll(): Promise<void> {
    while (this.#pending.length > 0) {
      const batch = concat(this.#pending);
      const waiters = this.#waiters;
      this.#pending = [];
      this.#waiters = [];
      if (this.#broken !== undefined) {
        for (const waiter of waiters) waiter.reject(this.#unavailable(this.#broken));
        continue;
      }
      const file = this.#file;
      try {
        let written = 0;
        while (written < batch.length) written += (await file.handle.write(batch, written)).bytesWritten;
        if (this.#sync && !this.#writeIsSync) await file.handle.datasync();
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

  #unavailable(cause: unknown): StorageError {
    const why = cause instanceof Error ? cause.message : String(cause);
    return new StorageError("ERR_STORAGE_UNAVAILABLE", `Cannot write to the ${this.#name} journal in ${this.#dir}: ${why}; restart once the disk is fixed`, { cause });
  }
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
  return open(path, constants.O_RDWR | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC, 0o644);
}

function logPath(dir: string, name: string, generation: number): string {
  return join(dir, `${name}.${String(generation).padStart(8, "0")}.log`);
}

/** A record as it lies in a file: its length and CRC-32, little-endian, then its bytes. */
function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, true);
  view.setUint32(4, crc32(payload), true);
  out.set(payload, HEADER);
  return out;
}

/** The whole records of a file, and where and why reading stopped early. */
function readFrames(bytes: Uint8Array): { payloads: unknown[]; end: number; error: string | undefined } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const payloads: unknown[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (bytes.length - at < HEADER) return { payloads, end: at, error: "a record header is cut short" };
    const length = view.getUint32(at, true);
    const sum = view.getUint32(at + 4, true);
    if (length > MAX_RECORD) return { payloads, end: at, error: "a record length is out of range" };
    if (bytes.length - at - HEADER < length) return { payloads, end: at, error: "a record is cut short" };
    const start = at + HEADER;
    if (crc32(bytes, start, start + length) !== sum) return { payloads, end: at, error: "a record's checksum does not match" };
    let payload: unknown;
    try {
      payload = JSON.parse(decoder.decode(bytes.subarray(start, start + length)));
    } catch {
      return { payloads, end: at, error: "a record is not JSON" };
    }
    payloads.push(payload);
    at = start + length;
  }
  return { payloads, end: at, error: undefined };
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

async function readIfExists(path: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Writes a file so that a crash leaves either the old one or the new one whole: a temporary file, fsync, rename, fsync of the folder. */
async function writeDurably(path: string, bytes: Uint8Array, dir: string): Promise<void> {
  const temporary = `${path}.tmp`;
  const handle = await open(temporary, "w");
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  const folder = await open(dir, "r");
  try {
    await folder.sync();
  } finally {
    await folder.close();
  }
}
