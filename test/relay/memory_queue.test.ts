import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Attempt, MemoryQueue } from "../../lib/relay/mod.ts";
import { jobQueueContract, makeJob } from "../_contracts/job_queue.ts";

jobQueueContract("MemoryQueue", (setup) => new MemoryQueue(setup));

const T0 = Date.UTC(2026, 10, 1);
const LEASE = 30_000;

function attempt(at: number, status: number): Attempt {
  return { at, outcome: status === 200 ? "success" : "failure", status, latencyMs: 3, error: status === 200 ? null : `HTTP ${status}` };
}

describe("MemoryQueue snapshot and restore", () => {
  /** A queue with a job in every state, and an idempotency key. */
  async function busy(): Promise<MemoryQueue> {
    const queue = new MemoryQueue();
    for (const job of ["leased", "delayed", "delivered", "dead"].map((m) => makeJob(m))) {
      await queue.enqueue({ tenantId: "acme", messageId: job.messageId, jobs: [job] });
    }
    const leases = await queue.claim({ now: T0, limit: 4, leaseMs: LEASE });
    const by = (message: string) => leases.find((lease) => lease.job.messageId === message)!;
    await queue.retry(by("delayed"), attempt(T0, 500), T0 + 5000);
    await queue.ack(by("delivered"), attempt(T0, 200));
    await queue.bury(by("dead"), { attempt: attempt(T0, 500), reason: "attempts ran out", at: T0 });
    await queue.enqueue({ tenantId: "acme", messageId: "ready", jobs: [makeJob("ready")] });
    await queue.enqueue({
      tenantId: "globex",
      messageId: "fan",
      jobs: [makeJob("fan", "a", "globex"), makeJob("fan", "b", "globex")],
      idempotency: { key: "order-1", answer: { bodyHash: "h", messageId: "fan", response: "{}" }, expiresAt: T0 + 60_000 },
    });
    return queue;
  }

  it("carries every job, its state and attempts, and idempotency keys over to a new queue; leased jobs come back ready", async () => {
    const before = await busy();
    const snapshot = JSON.parse(JSON.stringify(before.snapshot()));
    const after = new MemoryQueue();
    after.restore(snapshot);
    assert.deepEqual(await after.depth(T0), { ready: 4, delayed: 1, leased: 0, dead: 1 });
    for (const message of ["ready", "leased", "delayed", "delivered", "dead"]) {
      const [was] = await before.message("acme", message);
      const [now] = await after.message("acme", message);
      assert.deepEqual(now, { ...was!, state: was!.state === "leased" ? "ready" : was!.state }, message);
    }
    assert.equal((await after.deadLetters("acme", { limit: 5 }))[0]?.reason, "attempts ran out");
    const again = await after.enqueue({ tenantId: "globex", messageId: "other", jobs: [makeJob("other", "a", "globex")], idempotency: { key: "order-1", answer: { bodyHash: "h", messageId: "other", response: "{}" }, expiresAt: T0 } });
    assert.deepEqual(again, { accepted: false, previous: { bodyHash: "h", messageId: "fan", response: "{}" } });
    const claimed = await after.claim({ now: T0 + 5000, limit: 10, leaseMs: LEASE });
    assert.deepEqual(claimed.map((lease) => lease.job.id).sort(), ["delayed.ep1", "fan.a", "fan.b", "leased.ep1", "ready.ep1"]);
    assert.equal(claimed.find((lease) => lease.job.messageId === "delayed")!.job.attempts.length, 1);
  });

  it("keeps the retention of what it restores: delivered jobs and dead letters still expire", async () => {
    const after = new MemoryQueue({ deliveredRetentionMs: 1000, deadRetentionMs: 1000 });
    after.restore((await busy()).snapshot());
    await after.sweep(T0 + 2000);
    assert.deepEqual(await after.message("acme", "delivered"), []);
    assert.deepEqual(await after.deadLetters("acme", { limit: 5 }), []);
    assert.equal((await after.message("acme", "ready")).length, 1);
  });

  it("refuses to restore a message it holds already, taking none of the snapshot", async () => {
    const queue = await busy();
    const snapshot = queue.snapshot();
    assert.throws(() => queue.restore(snapshot), { name: "TypeError" });
    assert.deepEqual(await queue.depth(T0), { ready: 3, delayed: 1, leased: 1, dead: 1 });
  });

  it("refuses a lease it did not make", async () => {
    const queue = await busy();
    const [lease] = await queue.claim({ now: T0, limit: 1, leaseMs: LEASE });
    assert.equal(await queue.ack({ job: lease!.job, token: lease!.token, expiresAt: lease!.expiresAt }, attempt(T0, 200)), false);
    assert.equal(await queue.ack(lease!, attempt(T0, 200)), true);
  });
});
