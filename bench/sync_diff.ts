// Sync diff: a diff covering 100 changed objects (the base revision is 100
// changes before the head) takes no more than 1.5x as long in a context with
// 1,000,000 revisions of history as in one with 1,000. Both contexts hold the
// same 1,000 messages; their histories are one-message updates, and their
// last 100 revisions update the same 100 messages.
// Needs: no disk, about 1 minute.
import { randomUUID } from "node:crypto";
import { type Change, RevisionLog, type SyncObject } from "../lib/sync/mod.ts";
import { type BenchResult, report } from "./_data.ts";

const OBJECTS = 1_000;
const CHANGED = 100;
const SMALL = 1_000;
const LARGE = 1_000_000;
const ROUNDS = 400;
const BATCH = 20;

const ME: SyncObject = { uuid: randomUUID(), username: "bench", notify_language: null };

function key(n: number): string {
  return `10000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

function update(n: number, version: number): Change {
  const value = {
    uuid: key(n),
    subject: `Subject ${version}`,
    body: "",
    read: version % 2 === 0,
    sent_at: "2024-01-01T00:00:00Z",
  };
  return { entity: "messages", key: value.uuid, value };
}

/** A context with `revisions` revisions, and the id of the revision 100 changes before its head. */
function build(revisions: number): { log: RevisionLog; base: string } {
  let time = Date.UTC(2024, 0, 1);
  const log = new RevisionLog({ now: () => time, uuid: randomUUID, me: ME });
  log.commit(Array.from({ length: OBJECTS }, (_, n) => update(n, 0)));
  for (let i = log.head.serial; i < revisions - CHANGED; i++) {
    time += 1;
    log.commit([update(i % OBJECTS, i)]);
  }
  const base = log.head.uuid;
  for (let n = 0; n < CHANGED; n++) log.commit([update(n * 7, -1 - n)]);
  if (log.head.serial !== revisions) throw new Error(`built ${log.head.serial} revisions`);
  return { log, base };
}

/** What the service does for `GET …/since/<base>`: find the revision, compute the diff. */
function diffSince(log: RevisionLog, base: string): number {
  const diff = log.diff(log.resolve(base));
  if (diff === undefined) return 0;
  return diff.objects.messages.length + diff.deleted_objects.messages.length;
}

/** What the service does to decide whether to queue a diff. */
function countSince(log: RevisionLog, base: string): number {
  return log.changedSince(log.resolve(base));
}

let started = performance.now();
const small = build(SMALL);
const large = build(LARGE);
const seconds = (since: number): string => `${((performance.now() - since) / 1000).toFixed(1)} s`;
console.log(`built ${SMALL} and ${LARGE} revisions in ${seconds(started)}`);
for (const { log, base } of [small, large]) {
  const changed = diffSince(log, base);
  if (changed !== CHANGED || log.changedSince(log.resolve(base)) !== CHANGED) {
    throw new Error(`expected ${CHANGED} changed objects, got ${changed}`);
  }
}
globalThis.gc?.();

/** The best time of one call over `BATCH` calls, in milliseconds. */
function sample(fn: () => unknown): number {
  const start = performance.now();
  for (let i = 0; i < BATCH; i++) fn();
  return (performance.now() - start) / BATCH;
}

let smallDiff = Infinity;
let largeDiff = Infinity;
let smallCount = Infinity;
let largeCount = Infinity;
started = performance.now();
for (let round = 0; round < ROUNDS; round++) {
  smallDiff = Math.min(smallDiff, sample(() => diffSince(small.log, small.base)));
  largeDiff = Math.min(largeDiff, sample(() => diffSince(large.log, large.base)));
  smallCount = Math.min(smallCount, sample(() => countSince(small.log, small.base)));
  largeCount = Math.min(largeCount, sample(() => countSince(large.log, large.base)));
}
const us = (ms: number): string => `${(ms * 1000).toFixed(1)} µs`;
console.log(`best of ${ROUNDS} rounds of ${BATCH} calls each, ${seconds(started)}:`);
const sizes = (a: number, b: number): string =>
  `${SMALL} revisions ${us(a)}, ${LARGE} revisions ${us(b)}`;
console.log(`  diff of ${CHANGED} objects: ${sizes(smallDiff, largeDiff)}`);
console.log(`  changedSince: ${sizes(smallCount, largeCount)}`);
const results: BenchResult[] = [
  {
    name: "sync diff 100 changes",
    measure: "time at 1M revisions / time at 1k revisions",
    ratio: largeDiff / smallDiff,
    target: "<= 1.5",
    pass: largeDiff / smallDiff <= 1.5,
  },
];
report(results);
