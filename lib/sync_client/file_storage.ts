// A storage in a folder, for Node, Deno and Bun. `node:fs/promises` is
// imported when the storage is first used, by a specifier the bundlers of
// browser apps do not follow, so that the rest of the client stays free of
// Node: a browser app that never calls fileStorage never loads it.
import type { SyncStorage } from "./types.ts";

/** The file handle calls the storage makes (Node's `FileHandle` has them). */
export interface StorageFileHandle {
  write(data: string): Promise<unknown>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** The file system calls the storage makes (`node:fs/promises` has them). */
export interface StorageFileSystem {
  mkdir(path: string, options: { recursive: true }): Promise<unknown>;
  readFile(path: string, encoding: "utf8"): Promise<string>;
  open(path: string, flags: string): Promise<StorageFileHandle>;
  rename(from: string, to: string): Promise<void>;
}

/** Options of {@linkcode fileStorage}. */
export interface FileStorageOptions {
  /**
   * The file system.
   * @default `node:fs/promises`, imported when first used
   */
  readonly fs?: StorageFileSystem;
  /**
   * Journal bytes above which the state is written anew and the journal emptied.
   * @default {262144}
   */
  readonly compactAbove?: number;
}

const NODE_FS = "node:fs/promises";

/** Whether an error is a file that is not there. */
function isMissing(error: unknown): boolean {
  return typeof error === "object" && error !== null && "code" in error &&
    error.code === "ENOENT";
}

/**
 * A storage in a folder it owns (made when missing; one client at a time):
 * `state.json`, the entries as last compacted, and `journal.jsonl`, each
 * write since as one line appended and flushed to the disk (`fsync`) before
 * the write resolves. A line cut short by a crash is not read back: a write
 * is there whole or not at all. When the journal grows past `compactAbove`
 * (and at each load), the entries are written to a temporary file, flushed,
 * and renamed over `state.json`, and the journal starts again.
 * @param path the folder
 * @param options the file system; when to compact
 * @returns the storage
 * @throws {TypeError} when `path` is empty
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl, clientId: "my-app", storage: fileStorage("var/sync") });
 * ```
 */
export function fileStorage(path: string, options: FileStorageOptions = {}): SyncStorage {
  if (typeof path !== "string" || path === "") {
    throw new TypeError("Cannot use a file storage: path must name a folder");
  }
  const dir = path.replace(/[\\/]+$/, "");
  const stateFile = `${dir}/state.json`;
  const journalFile = `${dir}/journal.jsonl`;
  const compactAbove = options.compactAbove ?? 256 * 1024;
  const entries = new Map<string, unknown>();
  let fs: StorageFileSystem | undefined = options.fs;
  let journal: StorageFileHandle | undefined;
  let journalBytes = 0;
  let opened: Promise<void> | undefined;

  async function fileSystem(): Promise<StorageFileSystem> {
    // A specifier in a variable: bundlers for the browser leave it alone.
    const specifier = NODE_FS;
    fs ??= (await import(specifier)) as StorageFileSystem;
    return fs;
  }

  /** Flushes the folder's entry list, where the platform can (not on Windows). */
  async function syncFolder(files: StorageFileSystem): Promise<void> {
    try {
      const handle = await files.open(dir, "r");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch {
      // A folder cannot be opened for fsync on some platforms; the rename stands.
    }
  }

  /** Writes every entry to state.json (temporary file, fsync, rename) and empties the journal. */
  async function compact(files: StorageFileSystem): Promise<void> {
    const temporary = `${stateFile}.tmp`;
    const handle = await files.open(temporary, "w");
    try {
      await handle.write(JSON.stringify(Object.fromEntries(entries)));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await files.rename(temporary, stateFile);
    await syncFolder(files);
    await journal?.close();
    journal = await files.open(journalFile, "w");
    await journal.sync();
    journalBytes = 0;
  }

  async function open(): Promise<void> {
    const files = await fileSystem();
    await files.mkdir(dir, { recursive: true });
    let state = "{}";
    try {
      state = await files.readFile(stateFile, "utf8");
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    for (const [key, value] of Object.entries(JSON.parse(state) as Record<string, unknown>)) {
      entries.set(key, value);
    }
    let lines = "";
    try {
      lines = await files.readFile(journalFile, "utf8");
    } catch (error) {
      if (!isMissing(error)) throw error;
    }
    for (const line of lines.split("\n")) {
      if (line === "") continue;
      let record: { set?: Record<string, unknown>; delete?: string[] };
      try {
        record = JSON.parse(line) as typeof record;
      } catch {
        // A line cut short by a crash: that write never resolved; nothing after it was written.
        break;
      }
      for (const key of record.delete ?? []) entries.delete(key);
      for (const [key, value] of Object.entries(record.set ?? {})) entries.set(key, value);
    }
    journal = await files.open(journalFile, "a");
    await compact(files);
  }

  return {
    async load() {
      opened ??= open();
      await opened;
      return new Map(entries);
    },
    async write(changes) {
      opened ??= open();
      await opened;
      const set: Record<string, unknown> = {};
      const deleted: string[] = [];
      for (const [key, value] of changes) {
        if (value === undefined) {
          deleted.push(key);
          entries.delete(key);
        } else {
          // A copy, as a load after a restart would give: the caller may change its own object.
          const copy: unknown = JSON.parse(JSON.stringify(value));
          set[key] = copy;
          entries.set(key, copy);
        }
      }
      const line = `${JSON.stringify({ set, delete: deleted })}\n`;
      await journal!.write(line);
      await journal!.sync();
      journalBytes += line.length;
      if (journalBytes > compactAbove) await compact(await fileSystem());
    },
    async close() {
      if (opened === undefined) return;
      await opened.catch(() => {});
      await journal?.close();
      journal = undefined;
      opened = undefined;
      entries.clear();
    },
  };
}
