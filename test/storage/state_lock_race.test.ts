// Two processes starting at once on one STATE_DIR, 1,000 times: over no
// lock, a stale lock (of a process of this host that is gone, or of another
// host that stopped renewing), and a half-written one. Never do both hold it;
// over a lock that can be taken, one does. Then 1,400 times two processes of
// different identities (another host name, boot or pid namespace: two
// containers on a shared volume), which judge each other's lock by its time
// alone, over the same locks and over one a live process of the first's
// host holds, renewing or frozen. The two run in one process here, their
// file system calls interleaved on libuv's thread pool; the two real
// processes (in two UTS namespaces) are test/e2e/state_restart.test.ts's.
import assert from "node:assert/strict";
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openStateDir, type StateDir, type StateDirOptions } from "../../lib/storage/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

const root = mkdtempSync(join(tmpdir(), "tributary-lock-race-"));
after(() => rmSync(root, { recursive: true, force: true }));

const HERE = "host-a boot-1 ns-1";
const KINDS = [
  "fresh",
  "gone on this host",
  "unrenewed on another host",
  "half-written by a live process",
  "half-written by one that died",
] as const;
type Kind = (typeof KINDS)[number];

/** A folder as the kind of trial leaves it before the two start. */
function prepare(dir: string, kind: Kind): void {
  mkdirSync(dir);
  const lock = join(dir, "LOCK.00000001");
  const old = new Date(Date.now() - 3_600_000);
  switch (kind) {
    case "fresh":
      return;
    case "gone on this host":
      writeFileSync(lock, JSON.stringify({ pid: 4242, host: "host-a", identity: HERE }));
      return;
    case "unrenewed on another host":
      writeFileSync(
        lock,
        JSON.stringify({ pid: 1, host: "host-b", identity: "host-b boot-2 ns-2" }),
      );
      utimesSync(lock, old, old);
      return;
    case "half-written by a live process":
      writeFileSync(lock, "");
      return;
    case "half-written by one that died":
      writeFileSync(lock, '{"pid": 9');
      utimesSync(lock, old, old);
  }
}

/** What happens while a contender watches a lock: the live writer of a half-written one finishes it. */
function during(dir: string, kind: Kind): () => void {
  if (kind !== "half-written by a live process") return () => {};
  return () =>
    writeFileSync(
      join(dir, "LOCK.00000001"),
      JSON.stringify({ pid: 7, host: "host-c", identity: "host-c boot-3 ns-3" }),
    );
}

/**
 * A contender: a process of this host (4242 is gone) on a clock shared by
 * the trial, where a wait passes at once but time goes on for everyone: each
 * lock held renews (as its timer would, every quarter lease) and `meanwhile`
 * happens.
 */
function contender(pid: number, trial: Trial, meanwhile: () => void): StateDirOptions {
  return {
    pid,
    identity: HERE,
    alive: (other) => other !== 4242,
    leaseMs: 1000,
    now: () => trial.t,
    sleep: async (ms) => {
      trial.t += ms;
      for (const renew of [...trial.renewals]) await renew();
      meanwhile();
      await new Promise((resolve) => setImmediate(resolve));
    },
    every: (task) => {
      trial.renewals.add(task);
      return () => trial.renewals.delete(task);
    },
  };
}

/** What the contenders of one trial share: the clock, and the renewals of the locks held. */
interface Trial {
  t: number;
  readonly renewals: Set<() => Promise<void>>;
}

describe("openStateDir() started twice at once", () => {
  it("never lets both hold the folder, over 1,000 trials of fresh, stale and half-written locks", async () => {
    const holders: Record<Kind, number[]> = Object.fromEntries(
      KINDS.map((kind) => [kind, [0, 0, 0]]),
    ) as Record<Kind, number[]>;
    for (let trial = 0; trial < 1000; trial++) {
      const kind = KINDS[trial % KINDS.length]!;
      const dir = join(root, `t${trial}`);
      prepare(dir, kind);
      const shared: Trial = { t: 0, renewals: new Set() };
      const outcomes = await Promise.allSettled([
        openStateDir(dir, contender(1000 + trial, shared, during(dir, kind))),
        openStateDir(dir, contender(5000 + trial, shared, during(dir, kind))),
      ]);
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") {
          assert.equal(
            (outcome.reason as { variable?: string }).variable,
            "STATE_DIR",
            String(outcome.reason),
          );
        }
      }
      const held = outcomes.filter((outcome): outcome is PromiseFulfilledResult<StateDir> =>
        outcome.status === "fulfilled"
      );
      holders[kind][held.length]!++;
      assert.ok(held.length <= 1, `trial ${trial} (${kind}): both hold the folder`);
      const expected = kind === "half-written by a live process" ? 0 : 1;
      assert.equal(held.length, expected, `trial ${trial} (${kind}): ${held.length} hold it`);
      // One lock file is left: the holder's newest generation.
      const locks = readdirSync(dir).filter((entry) => entry.startsWith("LOCK"));
      assert.equal(locks.length, 1, `trial ${trial} (${kind}): ${locks.join(", ")}`);
      for (const state of held) await state.value.close();
      rmSync(dir, { recursive: true, force: true });
    }
    assert.deepEqual(holders["half-written by a live process"], [200, 0, 0]);
    for (const kind of KINDS.filter((kind) => kind !== "half-written by a live process")) {
      assert.deepEqual(holders[kind], [0, 200, 0], kind);
    }
  });
});

/**
 * Time shared by the contenders of one trial, which passes only while every
 * contender still starting waits on it: a lease (20 s by default) never
 * passes while one of them is between two file system calls (microseconds),
 * as it would not for real processes. Timers (a holder's renewal, another
 * process's) run as it passes.
 */
class VirtualTime {
  t = 0;
  #starting = 0;
  #advancing = false;
  readonly #sleepers: { at: number; wake: () => void }[] = [];
  readonly #timers = new Set<{ next: number; every: number; task: () => Promise<void> | void }>();

  /** Runs a contender after `hops` turns of the event loop; time waits for it until it settles. */
  async start<T>(hops: number, contender: () => Promise<T>): Promise<T> {
    this.#starting++;
    try {
      for (let hop = 0; hop < hops; hop++) await new Promise((resolve) => setImmediate(resolve));
      return await contender();
    } finally {
      this.#starting--;
      this.#pass();
    }
  }

  sleep(ms: number): Promise<void> {
    return new Promise((wake) => {
      this.#sleepers.push({ at: this.t + ms, wake });
      this.#pass();
    });
  }

  /** Runs `task` every `ms` from now (once, for `Infinity`); returns a stop function. */
  every(task: () => Promise<void> | void, ms: number, first = ms): () => void {
    const timer = { next: this.t + first, every: ms, task };
    this.#timers.add(timer);
    return () => this.#timers.delete(timer);
  }

  /** Once every contender still starting sleeps: to the earliest waking, running the timers due on the way. */
  #pass(): void {
    if (this.#advancing || this.#starting === 0 || this.#sleepers.length < this.#starting) return;
    this.#advancing = true;
    void (async () => {
      const wake = Math.min(...this.#sleepers.map((sleeper) => sleeper.at));
      for (;;) {
        const due = [...this.#timers].filter((timer) => timer.next <= wake)
          .sort((a, b) => a.next - b.next)[0];
        if (due === undefined) break;
        this.t = due.next;
        due.next += due.every;
        if (due.next === Number.POSITIVE_INFINITY) this.#timers.delete(due);
        await due.task();
      }
      this.t = wake;
      const woken = this.#sleepers.filter((sleeper) => sleeper.at <= wake);
      this.#sleepers.splice(0, this.#sleepers.length, ...this.#sleepers.filter((s) => s.at > wake));
      this.#advancing = false;
      for (const sleeper of woken) sleeper.wake();
    })();
  }
}

const LEASE_MS = 1000;
/** Two contenders' identities, as two containers on one volume have them. */
const PAIRS = [
  ["another host name", "host-a boot-1 ns-1", "host-b boot-2 ns-1"],
  ["another boot", "host-a boot-1 ns-1", "host-a boot-9 ns-1"],
  ["another pid namespace", "host-a boot-1 ns-1", "host-a boot-1 ns-5"],
] as const;
const APART = [
  "fresh",
  "gone on the first's host",
  "live on the first's host, renewing",
  "live on the first's host, frozen",
  "unrenewed on a third host",
  "half-written by a live process",
  "half-written by one that died",
] as const;
type Apart = (typeof APART)[number];
/** How many of the two hold the folder, for each kind: 0 over a live lock, else 1. */
const HOLDERS: Record<Apart, number> = {
  "fresh": 1,
  "gone on the first's host": 1,
  "live on the first's host, renewing": 0,
  "live on the first's host, frozen": 1,
  "unrenewed on a third host": 1,
  "half-written by a live process": 0,
  "half-written by one that died": 1,
};
/** The process id of a live holder on the first's host; 4242 there is gone. */
const LIVE_PID = 7;

/** A folder as the kind of trial leaves it, and what its other processes do while the two start. */
function prepareApart(dir: string, kind: Apart, first: string, time: VirtualTime): void {
  mkdirSync(dir);
  const lock = join(dir, "LOCK.00000001");
  const old = new Date(Date.now() - 3_600_000);
  const host = (identity: string): string => identity.split(" ")[0]!;
  // Renews as a holder does: a later time each quarter lease.
  let renewed = Date.now();
  const renew = (): void => {
    renewed += 1000;
    utimesSync(lock, new Date(renewed), new Date(renewed));
  };
  switch (kind) {
    case "fresh":
      return;
    case "gone on the first's host":
      writeFileSync(lock, JSON.stringify({ pid: 4242, host: host(first), identity: first }));
      utimesSync(lock, old, old);
      return;
    case "live on the first's host, renewing":
      writeFileSync(lock, JSON.stringify({ pid: LIVE_PID, host: host(first), identity: first }));
      time.every(renew, LEASE_MS / 4);
      return;
    case "live on the first's host, frozen":
      writeFileSync(lock, JSON.stringify({ pid: LIVE_PID, host: host(first), identity: first }));
      utimesSync(lock, old, old);
      return;
    case "unrenewed on a third host":
      writeFileSync(
        lock,
        JSON.stringify({ pid: 1, host: "host-c", identity: "host-c boot-3 ns-3" }),
      );
      utimesSync(lock, old, old);
      return;
    case "half-written by a live process":
      writeFileSync(lock, "");
      // Its writer finishes a little later (an older version, or a file system without links), then renews.
      time.every(
        () => {
          writeFileSync(
            lock,
            JSON.stringify({ pid: 1, host: "host-c", identity: "host-c boot-3 ns-3" }),
          );
          renew();
        },
        Number.POSITIVE_INFINITY,
        LEASE_MS / 3,
      );
      time.every(renew, LEASE_MS / 4, LEASE_MS / 3 + LEASE_MS / 4);
      return;
    case "half-written by one that died":
      writeFileSync(lock, '{"pid": 9');
      utimesSync(lock, old, old);
  }
}

/** A contender of `identity` (where `LIVE_PID` runs and 4242 is gone) on the trial's time. */
function apart(pid: number, identity: string, time: VirtualTime): StateDirOptions {
  return {
    pid,
    identity,
    alive: (other) => other === LIVE_PID,
    leaseMs: LEASE_MS,
    now: () => time.t,
    sleep: (ms) => time.sleep(ms),
    every: (task, ms) => time.every(task, ms),
  };
}

describe("openStateDir() started at once by processes of different identities", () => {
  it("never lets both hold the folder, over 1,400 trials of fresh, live, stale and half-written locks", async () => {
    const seed = Number(process.env["LOCK_RACE_SEED"] ?? 0x10c4ed) >>> 0;
    const prng = createPrng(seed);
    const holders: Record<Apart, number[]> = Object.fromEntries(
      APART.map((kind) => [kind, [0, 0, 0]]),
    ) as Record<Apart, number[]>;
    for (let trial = 0; trial < 1400; trial++) {
      const kind = APART[trial % APART.length]!;
      const [pair, a, b] = prng.pick(PAIRS);
      // Two containers often run their process as pid 1 each.
      const samePid = prng.int(2) === 0;
      const contenders = [
        { identity: a, pid: samePid ? 1 : 1000 + trial, hops: prng.int(3) },
        { identity: b, pid: samePid ? 1 : 5000 + trial, hops: prng.int(3) },
      ];
      if (prng.int(2) === 0) contenders.reverse();
      const context = `seed ${seed}, trial ${trial} (${kind}, ${pair}, ${
        samePid ? "both pid 1" : "two pids"
      }, ${contenders.map((c) => `${c.identity} after ${c.hops}`).join(" and ")})`;
      const dir = join(root, `apart${trial}`);
      const time = new VirtualTime();
      prepareApart(dir, kind, a, time);
      const outcomes = await Promise.allSettled(
        contenders.map((c) =>
          time.start(c.hops, () => openStateDir(dir, apart(c.pid, c.identity, time)))
        ),
      );
      for (const outcome of outcomes) {
        if (outcome.status === "rejected") {
          assert.equal(
            (outcome.reason as { variable?: string }).variable,
            "STATE_DIR",
            `${context}: ${String(outcome.reason)}`,
          );
        }
      }
      const held = contenders.filter((_, i) => outcomes[i]!.status === "fulfilled");
      holders[kind][held.length]!++;
      assert.ok(held.length <= 1, `${context}: both hold the folder`);
      assert.equal(held.length, HOLDERS[kind], `${context}: ${held.length} hold it`);
      const entries = readdirSync(dir);
      const locks = entries.filter((entry) => entry.startsWith("LOCK"));
      assert.equal(locks.length, 1, `${context}: ${entries.join(", ")}`);
      assert.deepEqual(
        entries.filter((entry) => entry.endsWith(".tmp")),
        [],
        `${context}: no temporary left`,
      );
      if (held.length === 1) {
        // The lock on disk is the holder's; over a frozen holder of the first's host, the second took it.
        const body = JSON.parse(readFileSync(join(dir, locks[0]!), "utf8")) as { identity: string };
        assert.equal(body.identity, held[0]!.identity, `${context}: the lock names its holder`);
        if (kind === "live on the first's host, frozen") {
          assert.equal(
            held[0]!.identity,
            b,
            `${context}: the first's host's live holder is not taken over by it`,
          );
        }
      }
      for (const outcome of outcomes) {
        if (outcome.status === "fulfilled") await outcome.value.close();
      }
      rmSync(dir, { recursive: true, force: true });
    }
    for (const kind of APART) {
      const expected = [0, 0, 0];
      expected[HOLDERS[kind]] = 200;
      assert.deepEqual(holders[kind], expected, `seed ${seed}: ${kind}`);
    }
  });
});
