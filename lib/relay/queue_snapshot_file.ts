import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { ConfigError } from "../config/mod.ts";
import { type MemoryQueue, parseMemoryQueueSnapshot } from "./memory_queue.ts";

/**
 * Reads the memory queue saved at the last shutdown, if any, into `queue`,
 * then removes the file (it is written again at the next shutdown).
 * @param queue an empty memory queue
 * @param file the snapshot's path (`QUEUE_SNAPSHOT_FILE`); empty for none
 * @returns how many jobs it held
 * @throws {ConfigError} naming QUEUE_SNAPSHOT_FILE when the file cannot be read or is not a snapshot (it is kept)
 */
export async function restoreQueueSnapshot(queue: MemoryQueue, file: string): Promise<number> {
  if (file === "") return 0;
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw new ConfigError("QUEUE_SNAPSHOT_FILE", `Cannot start: QUEUE_SNAPSHOT_FILE ${file} cannot be read: ${(error as Error).message}`);
  }
  try {
    const snapshot = parseMemoryQueueSnapshot(text);
    queue.restore(snapshot);
    await rm(file);
    return snapshot.jobs.length;
  } catch (error) {
    throw new ConfigError(
      "QUEUE_SNAPSHOT_FILE",
      `Cannot start: QUEUE_SNAPSHOT_FILE ${file} is not a usable queue snapshot (move it away to start empty): ${(error as Error).message}`,
    );
  }
}

/**
 * Writes the memory queue to `file`, through a temporary file, so that a
 * crash while writing leaves the old one whole.
 * @param queue the queue
 * @param file the snapshot's path; empty for none
 * @returns how many jobs it saved
 */
export async function saveQueueSnapshot(queue: MemoryQueue, file: string): Promise<number> {
  if (file === "") return 0;
  const snapshot = queue.snapshot();
  await mkdir(dirname(file), { recursive: true });
  await writeFile(`${file}.tmp`, JSON.stringify(snapshot));
  await rename(`${file}.tmp`, file);
  return snapshot.jobs.length;
}
