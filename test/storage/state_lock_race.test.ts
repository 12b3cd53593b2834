// Two processes starting at once on one STATE_DIR, 1,000 times: over no
// lock, a stale lock (of a process of this host that is gone, or of another
// host that stopped renewing), and a half-written one. Never do both hold it;
// over a lock that can be taken, one does. The two run in one process here,
// their file system calls interleaved on libuv's thread pool; the two real
// processes (in two UTS namespaces) are test/e2e/state_restart.test.ts's.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { openStateDir, type StateDir, type StateDirOptions } from "../../lib/storage/mod.ts";

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
