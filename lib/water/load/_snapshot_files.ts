// The dataset snapshots' files in their cache folder: where each lies, and
// reading and writing them whole (edge code: the encoding is dataset_snapshot.ts).
import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { SNAPSHOT_HEAD_BYTES, snapshotMatches } from "../store/dataset_snapshot.ts";

/**
 * The snapshot file of a data file in a cache folder: named after its
 * dataset folder, for people, and a hash of its absolute path, so that
 * several datasets folders can share one cache folder.
 * @param cacheDir the cache folder
 * @param dataFile the data file
 * @returns the snapshot's path
 */
export function snapshotPath(cacheDir: string, dataFile: string): string {
  const absolute = resolve(dataFile);
  const folder = basename(dirname(absolute)).replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 80);
  const hash = createHash("sha256").update(absolute).digest("hex").slice(0, 16);
  return join(cacheDir, `${folder}-${hash}.snapshot`);
}

/**
 * The size of a snapshot whose first bytes say it was made under `key`.
 * @param path the snapshot's path
 * @param key the key it must have
 * @returns its size in bytes; undefined when there is none, or it is of another key or format
 */
export async function probeSnapshot(path: string, key: string): Promise<number | undefined> {
  let handle;
  try {
    handle = await open(path);
  } catch {
    return undefined;
  }
  try {
    const { size } = await handle.stat();
    const head = new Uint8Array(SNAPSHOT_HEAD_BYTES);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    return bytesRead === head.length && snapshotMatches(head, key) ? size : undefined;
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/**
 * Reads a whole file into one new buffer of its own (so 8-byte aligned):
 * one allocation, and reads straight into it.
 * @param path the file
 * @returns its bytes (fewer than its size said if it shrank meanwhile)
 */
export async function readWholeFile(path: string): Promise<Uint8Array> {
  const handle = await open(path);
  try {
    const { size } = await handle.stat();
    const bytes = new Uint8Array(size);
    let at = 0;
    while (at < size) {
      const { bytesRead } = await handle.read(bytes, at, Math.min(size - at, 1 << 30), at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return at === size ? bytes : bytes.subarray(0, at);
  } finally {
    await handle.close();
  }
}

/**
 * Writes a file whole or not at all: into a new file beside it, renamed over
 * it once written, so that a reader finds the old file or the new one, never
 * a part (a crash may still leave a torn file behind, which a snapshot's
 * checksum tells). The folder is made if need be.
 * @param path the file
 * @param chunks its bytes, in order
 */
export async function writeFileAtomically(
  path: string,
  chunks: readonly Uint8Array[],
): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const temporary = `${path}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    const handle = await open(temporary, "wx");
    try {
      await handle.writev(chunks);
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}
