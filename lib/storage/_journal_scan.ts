// Reading a journal's files back, apart from the file system: which records
// they hold, whether the last log ends in a torn tail (a crash while writing)
// or anything is damaged (bits flipped, bytes zeroed, files deleted or out of
// order), and what a repair would keep. Pure: bytes in, a verdict out.
import { crc32 } from "./_crc32.ts";

/** A frame's header: the payload's length and CRC-32, little-endian. */
export const HEADER = 8;
/** The largest record a journal writes. */
export const MAX_RECORD = 256 * 1024 * 1024;

const decoder = new TextDecoder("utf-8", { fatal: true });
/** How every log record's JSON begins: `{"s":<seq>,"r":…}`. */
const RECORD_START = new TextEncoder().encode('{"s":');

/** A file of the journal as read. */
export interface JournalFile {
  readonly path: string;
  readonly bytes: Uint8Array;
}

/** A log file as read, with its generation. */
export interface LogFile extends JournalFile {
  readonly generation: number;
}

/** A whole record found in a log. */
export interface FoundRecord {
  readonly seq: number;
  readonly record: unknown;
  /** Where its frame begins in its file. */
  readonly offset: number;
}

/** A stretch of a file that holds no whole record. */
export interface BadRegion {
  readonly offset: number;
  readonly end: number;
  readonly reason: string;
}

/** A log, frame by frame. */
export interface ScannedLog {
  readonly path: string;
  readonly generation: number;
  readonly size: number;
  readonly records: readonly FoundRecord[];
  readonly bad: readonly BadRegion[];
  /** The generations its link frames name: the logs that follow it (a compaction writes one as the old log's last frame). */
  readonly links: readonly number[];
}

/** What a journal lost to damage, for a message and a report. */
export interface JournalDamage {
  /** The file at fault (a log that should be there and is not included). */
  readonly file: string;
  /** The byte where the damage begins. */
  readonly offset: number;
  /** Bytes of the file that hold no whole record from there. */
  readonly bytes: number;
  readonly reason: string;
  /** Whole records after the damage, which cutting there would lose. */
  readonly recordsAfter: number;
}

/** A tail cut short by a crash while writing: the last bytes of the last log with a record, no whole record after them. */
export interface TornTail {
  readonly file: string;
  /** Where the last whole record ends. */
  readonly offset: number;
  readonly bytes: number;
  readonly reason: string;
}

/** What the files of a journal hold. */
export interface JournalScan {
  /** The state the snapshot holds; undefined without one (or a snapshot that only marks the journal's start). */
  readonly snapshot: unknown;
  /** Whether a snapshot file was read whole. */
  readonly hasSnapshot: boolean;
  /** The sequence number of the last record the snapshot holds. */
  readonly floor: number;
  /** The generation of the log the snapshot says follows it, when it says. */
  readonly generation: number | undefined;
  /** The logs read, oldest first (those the snapshot made obsolete left out). */
  readonly logs: readonly ScannedLog[];
  /** The records after the snapshot, in order, when there is no damage. */
  readonly records: readonly unknown[];
  /** The sequence number of the last record. */
  readonly seq: number;
  readonly torn: TornTail | undefined;
  /** Empty when the journal can be opened. */
  readonly damage: readonly JournalDamage[];
}

/** A frame at `at`, or why there is none. */
function frameAt(
  bytes: Uint8Array,
  view: DataView,
  at: number,
): { payload: unknown; end: number } | { error: string } {
  if (bytes.length - at < HEADER) return { error: "a record header is cut short" };
  const length = view.getUint32(at, true);
  const sum = view.getUint32(at + 4, true);
  if (length > MAX_RECORD) return { error: "a record length is out of range" };
  if (bytes.length - at - HEADER < length) return { error: "a record is cut short" };
  const start = at + HEADER;
  if (crc32(bytes, start, start + length) !== sum) {
    return { error: "a record's checksum does not match" };
  }
  try {
    return {
      payload: JSON.parse(decoder.decode(bytes.subarray(start, start + length))),
      end: start + length,
    };
  } catch {
    return { error: "a record is not JSON" };
  }
}

/**
 * The whole frames of a file from its start, and where and why reading
 * stopped early (a snapshot is read so: one frame, nothing after it).
 * @param bytes the file
 * @returns the payloads, the end of the last whole frame, and the reason reading stopped, if it did
 */
export function readFrames(
  bytes: Uint8Array,
): { payloads: unknown[]; end: number; error: string | undefined } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const payloads: unknown[] = [];
  let at = 0;
  while (at < bytes.length) {
    const found = frameAt(bytes, view, at);
    if ("error" in found) return { payloads, end: at, error: found.error };
    payloads.push(found.payload);
    at = found.end;
  }
  return { payloads, end: at, error: undefined };
}

function seqOf(payload: unknown): number | undefined {
  if (typeof payload !== "object" || payload === null) return undefined;
  const s = (payload as { s?: unknown }).s;
  return typeof s === "number" && Number.isSafeInteger(s) && s > 0 ? s : undefined;
}

/**
 * Reads a log frame by frame; past a bad stretch, looks for the next whole
 * record (a frame whose JSON starts as every record's does and whose
 * checksum matches), so that damage in the middle is told from a torn tail.
 * @param log the log file
 * @returns its records and its bad stretches
 */
export function scanLog(log: LogFile): ScannedLog {
  const { bytes } = log;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const records: FoundRecord[] = [];
  const bad: BadRegion[] = [];
  const links: number[] = [];
  let at = 0;
  while (at < bytes.length) {
    const found = frameAt(bytes, view, at);
    const seq = "error" in found ? undefined : seqOf(found.payload);
    if (!("error" in found) && seq !== undefined) {
      records.push({ seq, record: (found.payload as { r?: unknown }).r, offset: at });
      at = found.end;
      continue;
    }
    const link = "error" in found ? undefined : linkOf(found.payload);
    if (!("error" in found) && link !== undefined) {
      links.push(link);
      at = found.end;
      continue;
    }
    const reason = "error" in found ? found.error : "a record has no sequence number";
    const next = nextRecord(bytes, view, at + 1);
    bad.push({ offset: at, end: next ?? bytes.length, reason });
    if (next === undefined) break;
    at = next;
  }
  return { path: log.path, generation: log.generation, size: bytes.length, records, bad, links };
}

/** The generation a link frame (`{"next": <generation>}`) names. */
function linkOf(payload: unknown): number | undefined {
  if (typeof payload !== "object" || payload === null || "s" in payload) return undefined;
  const next = (payload as { next?: unknown }).next;
  return typeof next === "number" && Number.isSafeInteger(next) && next > 0 ? next : undefined;
}

/** Where the next whole record after `from` begins, if any. */
function nextRecord(bytes: Uint8Array, view: DataView, from: number): number | undefined {
  for (
    let hit = indexOf(bytes, RECORD_START, from + HEADER);
    hit !== -1;
    hit = indexOf(bytes, RECORD_START, hit + 1)
  ) {
    const start = hit - HEADER;
    const found = frameAt(bytes, view, start);
    if (!("error" in found) && seqOf(found.payload) !== undefined) return start;
  }
  return undefined;
}

function indexOf(bytes: Uint8Array, pattern: Uint8Array, from: number): number {
  const first = pattern[0]!;
  for (
    let at = bytes.indexOf(first, from);
    at !== -1 && at + pattern.length <= bytes.length;
    at = bytes.indexOf(first, at + 1)
  ) {
    let i = 1;
    while (i < pattern.length && bytes[at + i] === pattern[i]) i++;
    if (i === pattern.length) return at;
  }
  return -1;
}

/** The snapshot as read: its state, the sequence number it holds up to, and the log generation it says follows. */
interface ReadSnapshot {
  readonly state: unknown;
  readonly hasState: boolean;
  readonly seq: number;
  readonly generation: number | undefined;
}

function readSnapshot(file: JournalFile): ReadSnapshot | { error: string; offset: number } {
  const frames = readFrames(file.bytes);
  const payload = frames.payloads[0];
  if (frames.error !== undefined) return { error: frames.error, offset: frames.end };
  if (payload === undefined || frames.payloads.length !== 1) {
    return { error: "it does not hold exactly one record", offset: 0 };
  }
  const parsed = payload as { seq?: unknown; state?: unknown; generation?: unknown };
  if (typeof parsed.seq !== "number" || !Number.isSafeInteger(parsed.seq) || parsed.seq < 0) {
    return { error: "it has no sequence number", offset: 0 };
  }
  const generation =
    typeof parsed.generation === "number" && Number.isSafeInteger(parsed.generation)
      ? parsed.generation
      : undefined;
  return { state: parsed.state, hasState: "state" in parsed, seq: parsed.seq, generation };
}

/**
 * Tells what a journal's files hold: the snapshot, the records after it in
 * order, a torn tail, and any damage. A torn tail is a last log's end that
 * holds no whole record, with no whole record after it in any log; anything
 * else is damage: a bad stretch with records after it, a snapshot that
 * cannot be read, a log missing from the sequence (the one the snapshot
 * names, or one between two others), or records out of sequence (a log
 * deleted, reordered or replaced).
 * @param snapshot the snapshot file, if there is one
 * @param logs the log files, in any order
 * @param expectedLog where the log a snapshot names would be, by generation (for the report)
 * @returns the verdict
 */
export function scanJournal(
  snapshot: JournalFile | undefined,
  logs: readonly LogFile[],
  expectedLog: (generation: number) => string,
): JournalScan {
  const damage: JournalDamage[] = [];
  let state: unknown;
  let floor = 0;
  let generation: number | undefined;
  let hasSnapshot = false;
  if (snapshot !== undefined) {
    const read = readSnapshot(snapshot);
    if ("error" in read) {
      damage.push({
        file: snapshot.path,
        offset: read.offset,
        bytes: snapshot.bytes.length - read.offset,
        reason: read.error,
        recordsAfter: 0,
      });
    } else {
      hasSnapshot = true;
      state = read.hasState ? read.state : undefined;
      floor = read.seq;
      generation = read.generation;
    }
  }
  const sorted = [...logs].sort((a, b) => a.generation - b.generation);
  // Logs older than the one the snapshot names hold only records it has (a compaction that stopped before removing them).
  const live = sorted.filter((log) => generation === undefined || log.generation >= generation);
  const scanned = live.map(scanLog);
  if (generation !== undefined && (scanned.length === 0 || scanned[0]!.generation !== generation)) {
    damage.push({
      file: expectedLog(generation),
      offset: 0,
      bytes: 0,
      reason: "the log the snapshot names is missing",
      recordsAfter: 0,
    });
  }
  const generations = new Set(scanned.map((log) => log.generation));
  for (const log of scanned) {
    for (const next of log.links) {
      if (!generations.has(next) && (generation === undefined || next > generation)) {
        damage.push({
          file: expectedLog(next),
          offset: 0,
          bytes: 0,
          reason: `the log that ${log.path} goes on in is missing`,
          recordsAfter: 0,
        });
      }
    }
  }
  for (let i = 1; i < scanned.length; i++) {
    if (scanned[i]!.generation !== scanned[i - 1]!.generation + 1) {
      damage.push({
        file: expectedLog(scanned[i - 1]!.generation + 1),
        offset: 0,
        bytes: 0,
        reason: `the log between generations ${scanned[i - 1]!.generation} and ${
          scanned[i]!.generation
        } is missing`,
        recordsAfter: 0,
      });
    }
  }
  // The last log holding a record: only its end may be torn.
  let lastWithRecords = -1;
  for (let i = scanned.length - 1; i >= 0; i--) {
    if (scanned[i]!.records.length > 0) {
      lastWithRecords = i;
      break;
    }
  }
  let torn: TornTail | undefined;
  const records: unknown[] = [];
  let seq = floor;
  for (const [i, log] of scanned.entries()) {
    for (const region of log.bad) {
      const recordsAfterHere = log.records.filter((found) => found.offset > region.offset).length;
      const tail = region.end === log.size && recordsAfterHere === 0 && i >= lastWithRecords &&
        laterRecords(scanned, i) === 0;
      if (tail && torn === undefined) {
        torn = {
          file: log.path,
          offset: region.offset,
          bytes: log.size - region.offset,
          reason: region.reason,
        };
      } else {
        damage.push({
          file: log.path,
          offset: region.offset,
          bytes: region.end - region.offset,
          reason: region.reason,
          recordsAfter: recordsAfterHere + laterRecords(scanned, i),
        });
      }
    }
    for (const found of log.records) {
      if (found.seq <= floor) continue;
      if (found.seq !== seq + 1) {
        const reason = found.seq > seq + 1
          ? `records ${seq + 1} to ${found.seq - 1} are missing before it`
          : `a record (${found.seq}) comes again or out of order after record ${seq}`;
        damage.push({
          file: log.path,
          offset: found.offset,
          bytes: 0,
          reason,
          recordsAfter: log.records.filter((other) => other.offset >= found.offset).length +
            laterRecords(scanned, i),
        });
        if (found.seq < seq + 1) continue;
      }
      records.push(found.record);
      seq = found.seq;
    }
  }
  return {
    snapshot: state,
    hasSnapshot,
    floor,
    generation,
    logs: scanned,
    records,
    seq,
    torn,
    damage,
  };
}

function laterRecords(logs: readonly ScannedLog[], index: number): number {
  let count = 0;
  for (let i = index + 1; i < logs.length; i++) count += logs[i]!.records.length;
  return count;
}

/**
 * What a repair keeps: every whole record of every log (those the snapshot
 * holds left out), each sequence number once, in order.
 * @param scan the journal as read
 * @param all every log, the obsolete ones included (a damaged snapshot makes them worth reading)
 * @returns the records to write again, oldest first
 */
export function keptRecords(scan: JournalScan, all: readonly LogFile[]): unknown[] {
  const bySeq = new Map<number, unknown>();
  const logs = scan.hasSnapshot
    ? scan.logs
    : [...all].sort((a, b) => a.generation - b.generation).map(scanLog);
  for (const log of logs) {
    for (const found of log.records) {
      if (found.seq > scan.floor && !bySeq.has(found.seq)) bySeq.set(found.seq, found.record);
    }
  }
  return [...bySeq.entries()].sort((a, b) => a[0] - b[0]).map(([, record]) => record);
}
