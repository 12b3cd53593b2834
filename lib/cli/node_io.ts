import { createReadStream } from "node:fs";
import { open, readFile, rename, stat, unlink } from "node:fs/promises";
import { text } from "node:stream/consumers";
import { pooledRandom } from "../crypto/mod.ts";
import { checkStateDir, connectPostgres, repairStateDir } from "../storage/mod.ts";
import { loadDatasets } from "../water/mod.ts";
import { runCli } from "./run_cli.ts";
import type { CliIo } from "./types.ts";

/**
 * The world of a real run: `process.env`, the process's standard streams,
 * the file system (files replaced by a rename, keeping their mode), `fetch`,
 * `pg` through lib/storage, `node:crypto`'s randomness and the wall clock.
 * @returns the I/O
 */
export function nodeCliIo(): CliIo {
  return {
    env: process.env,
    out: (chunk) => void process.stdout.write(chunk),
    err: (chunk) => void process.stderr.write(chunk),
    stdin: async () => (process.stdin.isTTY === true ? undefined : await text(process.stdin)),
    readText: async (path) => {
      try {
        return await readFile(path, "utf8");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
    },
    writeText: replaceFile,
    isFile: async (path) => (await stat(path).catch(() => undefined))?.isFile() === true,
    isFolder: async (path) => (await stat(path).catch(() => undefined))?.isDirectory() === true,
    checkState: (dir) => checkStateDir(dir),
    repairState: (dir) => repairStateDir(dir),
    readChunks: (path) => createReadStream(path, { highWaterMark: 1 << 20 }),
    loadDatasets: (dir, options) => loadDatasets(dir, options),
    fetch: (url, init) => fetch(url, init),
    connectPostgres: (url, options) => connectPostgres(url, options),
    random: pooledRandom(),
    now: Date.now,
  };
}

/** Replaces a file by a new one renamed over it (on disk first), with the old one's mode. */
async function replaceFile(path: string, content: string): Promise<void> {
  const mode = (await stat(path).catch(() => undefined))?.mode;
  const temporary = `${path}.${process.pid}.tmp`;
  const handle = await open(temporary, "wx");
  try {
    await handle.writeFile(content);
    if (mode !== undefined) await handle.chmod(mode & 0o7777);
    await handle.sync();
  } catch (error) {
    await handle.close();
    await unlink(temporary).catch(() => {});
    throw error;
  }
  await handle.close();
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => {});
    throw error;
  }
}

/**
 * The `tributary` program: runs the command line of this process and sets its exit code.
 * @param argv the arguments after the program's name
 */
export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  process.exitCode = await runCli(argv, nodeCliIo());
}
