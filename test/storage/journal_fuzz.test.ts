// A journal with a known state, damaged at random (bits flipped, files cut,
// blocks zeroed, files deleted or swapped): every outcome is either a start
// that keeps everything before the damage (a torn tail cut and reported) or a
// refusal that changes nothing on disk, after which a repair keeps every
// record whose bytes survived.
import assert from "node:assert/strict";
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { before, describe, it } from "node:test";
import { Journal, repairJournal } from "../../lib/storage/mod.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";

const NAME = "fuzz";
const SNAPSHOT_ITEMS = 100;
const TOTAL = 250;
const TRIALS = 300;

/** Where each record after the snapshot lies: its file and byte range, as first written. */
interface Placed {
  readonly n: number;
  readonly file: string;
  readonly start: number;
  readonly end: number;
}

let base = "";
const placed: Placed[] = [];

/**
 * The base: records 0-99 compacted into a snapshot, then 100-249 in three
 * logs (two compactions failed after opening their logs, as a full disk
 * leaves them), so that there are several files to damage.
 */
before(async () => {
  base = mkdtempSync(join(tmpdir(), "tributary-journal-fuzz-"));
  const { journal } = await Journal.open({ dir: base, name: NAME });
  const items: number[] = [];
  const append = async (n: number): Promise<void> => {
    items.push(n);
    await journal.append({ n, note: `reading ${n}` });
  };
  for (let n = 0; n < SNAPSHOT_ITEMS; n++) await append(n);
  await journal.compact(() => ({ items: [...items] }));
  for (let n = SNAPSHOT_ITEMS; n < TOTAL; n++) {
    if (n === 150 || n === 200) {
      await assert.rejects(journal.compact(() => {
        throw new Error("the disk is full");
      }));
    }
    await append(n);
  }
  await journal.close();
  // Where each record lies, read back from the files as written.
  for (const file of logs(base)) {
    const bytes = readFileSync(join(base, file));
    let at = 0;
    while (at < bytes.length) {
      const length = bytes.readUInt32LE(at);
      const end = at + 8 + length;
      const { r } = JSON.parse(bytes.subarray(at + 8, end).toString()) as { r?: { n: number } };
      // Besides records, a log's last frame may name the log that follows it.
      if (r !== undefined) placed.push({ n: r.n, file, start: at, end });
      at = end;
    }
  }
  assert.deepEqual(logs(base), [
    `${NAME}.00000002.log`,
    `${NAME}.00000003.log`,
    `${NAME}.00000004.log`,
  ]);
  assert.equal(placed.length, TOTAL - SNAPSHOT_ITEMS);
});

function logs(dir: string): string[] {
  return readdirSync(dir).filter((file) => /\.\d{8}\.log$/.test(file)).sort();
}

function files(dir: string): Map<string, Buffer> {
  return new Map(readdirSync(dir).sort().map((file) => [file, readFileSync(join(dir, file))]));
}

/** A random damage to the folder, described. */
function damage(dir: string, prng: Prng): string {
  const all = readdirSync(dir).sort();
  const file = prng.pick(all);
  const path = join(dir, file);
  const bytes = readFileSync(path);
  switch (prng.int(5)) {
    case 0: {
      const at = prng.int(bytes.length);
      bytes[at] = bytes[at]! ^ (1 << prng.int(8));
      writeFileSync(path, bytes);
      return `bit flipped in ${file} at ${at}`;
    }
    case 1: {
      const length = prng.int(bytes.length);
      writeFileSync(path, bytes.subarray(0, length));
      return `${file} cut to ${length} bytes`;
    }
    case 2: {
      const at = prng.int(bytes.length);
      const length = Math.min(1 + prng.int(512), bytes.length - at);
      bytes.fill(0, at, at + length);
      writeFileSync(path, bytes);
      return `${file} zeroed from ${at} for ${length} bytes`;
    }
    case 3:
      rmSync(path);
      return `${file} deleted`;
    default: {
      const [a, b] = [prng.pick(logs(dir)), prng.pick(logs(dir))];
      const first = readFileSync(join(dir, a));
      writeFileSync(join(dir, a), readFileSync(join(dir, b)));
      writeFileSync(join(dir, b), first);
      return `${a} and ${b} swapped`;
    }
  }
}

/** The records whose bytes are still where they were written. */
function survivors(dir: string): number[] {
  return placed.filter((record) => {
    const path = join(dir, record.file);
    if (!existsSync(path)) return false;
    const now = readFileSync(path);
    const then = readFileSync(join(base, record.file));
    return now.length >= record.end &&
      now.subarray(record.start, record.end).equals(then.subarray(record.start, record.end));
  }).map((record) => record.n);
}

/** Whether the snapshot is still as it was written. */
function snapshotSurvives(dir: string): boolean {
  const path = join(dir, `${NAME}.snapshot`);
  return existsSync(path) &&
    readFileSync(path).equals(readFileSync(join(base, `${NAME}.snapshot`)));
}

/** What a journal opened on the folder holds, as the list of `n` it rebuilds; the torn tail it reports. */
async function opened(dir: string): Promise<{ items: number[]; torn: boolean }> {
  const { journal, replay } = await Journal.open({ dir, name: NAME });
  await journal.close();
  const snapshot = (replay.snapshot as { items?: number[] } | undefined)?.items ?? [];
  return {
    items: [...snapshot, ...replay.records.map((record) => (record as { n: number }).n)],
    torn: replay.dropped !== undefined,
  };
}

/** A cut that ends the last log exactly between two records: nothing tells it from a log never written further. */
function cutAtRecordBoundary(what: string): boolean {
  const match = /^(.+) cut to (\d+) bytes$/.exec(what);
  if (match === null) return false;
  return placed.some((record) => record.file === match[1] && record.end === Number(match[2])) &&
    match[1] === logs(base).at(-1);
}

describe("Journal.open() and repairJournal() on randomly damaged journals", () => {
  it(`keep everything before the damage or refuse, then repair keeping every surviving record (${TRIALS} trials)`, async () => {
    const seed = Number(process.env["FUZZ_SEED"] ?? 0x5eed0f) >>> 0;
    const prng = createPrng(seed);
    const all = Array.from({ length: TOTAL }, (_, n) => n);
    const outcomes = { opened: 0, torn: 0, refused: 0 };
    for (let trial = 0; trial < TRIALS; trial++) {
      const dir = mkdtempSync(join(tmpdir(), "tributary-journal-trial-"));
      cpSync(base, dir, { recursive: true });
      const what = damage(dir, prng);
      const context = `seed ${seed}, trial ${trial}: ${what}`;
      const kept = survivors(dir);
      const snapshotKept = snapshotSurvives(dir);
      const before = files(dir);
      let result: { items: number[]; torn: boolean } | undefined;
      try {
        result = await opened(dir);
      } catch (error) {
        assert.equal(
          (error as { code?: string }).code,
          "ERR_STORAGE_CORRUPT",
          `${context}: ${String(error)}`,
        );
        assert.deepEqual(files(dir), before, `${context}: a refusal changes nothing`);
      }
      if (result !== undefined) {
        // Opened: everything before the damage, in order; anything less only with the torn tail reported.
        assert.deepEqual(
          result.items,
          all.slice(0, result.items.length),
          `${context}: a prefix of the state`,
        );
        for (const n of kept) {
          assert.ok(result.items.includes(n), `${context}: record ${n} survived on disk`);
        }
        if (result.items.length < TOTAL && !cutAtRecordBoundary(what)) {
          assert.ok(result.torn, `${context}: a shorter state says why`);
        }
        outcomes[result.torn ? "torn" : "opened"]++;
      } else {
        outcomes.refused++;
        await repairJournal(dir, NAME, { now: () => trial });
        const repaired = await opened(dir);
        // Every record whose bytes survived, each once, in order; the snapshot's when it survived.
        const expected = [...(snapshotKept ? all.slice(0, SNAPSHOT_ITEMS) : []), ...kept];
        for (const n of expected) {
          assert.ok(repaired.items.includes(n), `${context}: record ${n} kept by the repair`);
        }
        assert.deepEqual(
          repaired.items,
          [...new Set(repaired.items)].sort((a, b) => a - b),
          `${context}: once each, in order`,
        );
        assert.ok(
          readdirSync(dir).some((file) => file.includes(".damaged-")),
          `${context}: the damaged files moved aside`,
        );
      }
      rmSync(dir, { recursive: true, force: true });
    }
    // Every kind of outcome happened (a fuzz that only ever opens proves little).
    assert.ok(
      outcomes.opened > 0 && outcomes.torn > 0 && outcomes.refused > 0,
      JSON.stringify(outcomes),
    );
  });
});
