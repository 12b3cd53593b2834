import { readdir, rename } from "node:fs/promises";
import { join } from "node:path";
import {
  frame,
  LOG_FILE,
  logPath,
  readJournalFiles,
  stamp,
  writeDurably,
} from "./_journal_files.ts";
import { type JournalDamage, keptRecords, scanJournal, type TornTail } from "./_journal_scan.ts";
import { openStateDir, type StateDirOptions } from "./state_dir.ts";

/** What a journal's files hold, as `state check` reports it (and `state repair` after its work). */
export interface JournalReport {
  readonly name: string;
  /** `whole`; `torn` (a crash's torn tail, which the next start cuts and keeps aside); `damaged` (the start refuses). */
  readonly status: "whole" | "torn" | "damaged";
  /** Whether a snapshot with state was read whole (a new journal's holds none). */
  readonly snapshot: boolean;
  /** Whole records after the snapshot that a start replays (0 when damaged). */
  readonly records: number;
  readonly torn: TornTail | undefined;
  readonly damage: readonly JournalDamage[];
  /** Whole records a repair keeps: every one found, damaged stretches left out. */
  readonly repairable: number;
  /** Files a repair moved aside (`<file>.damaged-<time>`); empty for a check. */
  readonly movedAside: readonly string[];
}

/** Options of {@linkcode repairJournal} and {@linkcode repairStateDir}. */
export interface RepairOptions extends StateDirOptions {
  /**
   * Wall clock, milliseconds since the epoch: names the files moved aside.
   * @default {Date.now}
   */
  readonly now?: () => number;
}

/**
 * Reads a journal without changing anything and says what a start would do with it.
 * @param dir the state folder
 * @param name the journal's name, e.g. `sync`
 * @returns the report
 */
export async function checkJournal(dir: string, name: string): Promise<JournalReport> {
  const files = await readJournalFiles(dir, name);
  const scan = scanJournal(
    files.snapshot,
    files.logs,
    (generation) => logPath(dir, name, generation),
  );
  return {
    name,
    status: scan.damage.length > 0 ? "damaged" : scan.torn === undefined ? "whole" : "torn",
    snapshot: scan.hasSnapshot && scan.snapshot !== undefined,
    records: scan.damage.length > 0 ? 0 : scan.records.length,
    torn: scan.torn,
    damage: scan.damage,
    repairable: keptRecords(scan, files.logs).length,
    movedAside: [],
  };
}

/**
 * Repairs a damaged journal: every whole record of every log is written again
 * in order into a new log (each sequence number once, the damaged stretches
 * and anything missing left out), the snapshot kept when it reads whole, and
 * the old files moved aside as `<file>.damaged-<time>`, so that nothing is
 * deleted. A journal that is whole, or only torn (the next start cuts that),
 * is left as it is. Hold the state folder's lock meanwhile
 * ({@linkcode repairStateDir} does).
 * @param dir the state folder
 * @param name the journal's name
 * @param options the clock naming the files moved aside
 * @returns the report of the journal as it was, with the files moved aside
 */
export async function repairJournal(
  dir: string,
  name: string,
  options: RepairOptions = {},
): Promise<JournalReport> {
  const report = await checkJournal(dir, name);
  if (report.status !== "damaged") return report;
  const files = await readJournalFiles(dir, name);
  const scan = scanJournal(
    files.snapshot,
    files.logs,
    (generation) => logPath(dir, name, generation),
  );
  const kept = keptRecords(scan, files.logs);
  const suffix = `.damaged-${stamp((options.now ?? Date.now)())}`;
  const movedAside: string[] = [];
  // A snapshot that cannot be read goes aside first: the one written below replaces it.
  if (files.snapshot !== undefined && !scan.hasSnapshot) {
    await rename(files.snapshot.path, files.snapshot.path + suffix);
    movedAside.push(files.snapshot.path + suffix);
  }
  const generation = Math.max(0, scan.generation ?? 0, ...files.logs.map((log) => log.generation)) +
    1;
  const floor = scan.hasSnapshot ? scan.floor : 0;
  const encoder = new TextEncoder();
  const frames = kept.map((record, i) =>
    frame(encoder.encode(JSON.stringify({ s: floor + i + 1, r: record })))
  );
  await writeDurably(logPath(dir, name, generation), concat(frames), dir);
  // From here the snapshot names the new log: the old ones are obsolete, and a start ignores them.
  const snapshot = scan.hasSnapshot && scan.snapshot !== undefined
    ? { seq: floor, generation, state: scan.snapshot }
    : { seq: floor, generation };
  await writeDurably(
    join(dir, `${name}.snapshot`),
    frame(encoder.encode(JSON.stringify(snapshot))),
    dir,
  );
  for (const log of files.logs) {
    await rename(log.path, log.path + suffix);
    movedAside.push(log.path + suffix);
  }
  return { ...report, movedAside };
}

/**
 * The journals of a state folder, by name.
 * @param dir the state folder
 * @returns the names, sorted
 */
export async function journalNames(dir: string): Promise<string[]> {
  const names = new Set<string>();
  for (const entry of await readdir(dir)) {
    const log = LOG_FILE.exec(entry);
    if (log !== null) names.add(log[1]!);
    else if (entry.endsWith(".snapshot")) names.add(entry.slice(0, -".snapshot".length));
  }
  return [...names].sort();
}

/**
 * Checks every journal of a state folder, changing nothing (a server may be running on it).
 * @param dir the state folder
 * @returns a report per journal
 */
export async function checkStateDir(dir: string): Promise<JournalReport[]> {
  const reports: JournalReport[] = [];
  for (const name of await journalNames(dir)) reports.push(await checkJournal(dir, name));
  return reports;
}

/**
 * Repairs every damaged journal of a state folder, holding its lock (so no
 * server runs on it meanwhile).
 * @param dir the state folder
 * @param options the clock, and the lock's process id and liveness probe
 * @returns a report per journal
 * @throws {ConfigError} naming STATE_DIR when a running process holds the folder
 */
export async function repairStateDir(
  dir: string,
  options: RepairOptions = {},
): Promise<JournalReport[]> {
  const state = await openStateDir(dir, options);
  try {
    const reports: JournalReport[] = [];
    for (const name of await journalNames(state.dir)) {
      reports.push(await repairJournal(state.dir, name, options));
    }
    return reports;
  } finally {
    await state.close();
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
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
