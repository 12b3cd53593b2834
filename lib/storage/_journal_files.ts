// The files of a journal: their names, their frames, and writes that a
// crash leaves whole. Shared by the journal and its repair.
import { open, readdir, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { crc32 } from "./_crc32.ts";
import { HEADER, type JournalFile, type LogFile } from "./_journal_scan.ts";

/** A log file's name: `<journal>.<generation, 8 digits>.log`. */
export const LOG_FILE = /^(.+)\.([0-9]{8})\.log$/;

/** A journal's files as they are on disk: the snapshot, if any, and every log. */
export async function readJournalFiles(
  dir: string,
  name: string,
): Promise<{ snapshot: JournalFile | undefined; logs: LogFile[] }> {
  const snapshotPath = join(dir, `${name}.snapshot`);
  const snapshotBytes = await readIfExists(snapshotPath);
  const logs: LogFile[] = [];
  for (const entry of await readdir(dir)) {
    const match = LOG_FILE.exec(entry);
    if (match === null || match[1] !== name) continue;
    const path = join(dir, entry);
    logs.push({
      path,
      generation: Number(match[2]),
      bytes: (await readIfExists(path)) ?? new Uint8Array(0),
    });
  }
  logs.sort((a, b) => a.generation - b.generation);
  return {
    snapshot: snapshotBytes === undefined
      ? undefined
      : { path: snapshotPath, bytes: snapshotBytes },
    logs,
  };
}

/** A time as file names carry it: `20261128T014530Z`. */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");
}

export async function truncateDurably(path: string, length: number): Promise<void> {
  const handle = await open(path, "r+");
  try {
    await handle.truncate(length);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export function logPath(dir: string, name: string, generation: number): string {
  return join(dir, `${name}.${String(generation).padStart(8, "0")}.log`);
}

/** A record as it lies in a file: its length and CRC-32, little-endian, then its bytes. */
export function frame(payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEADER + payload.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, payload.length, true);
  view.setUint32(4, crc32(payload), true);
  out.set(payload, HEADER);
  return out;
}

export async function readIfExists(path: string): Promise<Uint8Array | undefined> {
  try {
    return await readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
}

/** Writes a file so that a crash leaves either the old one or the new one whole: a temporary file, fsync, rename, fsync of the folder. */
export async function writeDurably(path: string, bytes: Uint8Array, dir: string): Promise<void> {
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
