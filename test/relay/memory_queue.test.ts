import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Attempt,
  MemoryQueue,
  type MemoryQueueOptions,
  type QueueChange,
} from "../../lib/relay/mod.ts";
import { jobQueueContract, makeJob } from "../_contracts/job_queue.ts";
import { journaledStores } from "../_helpers/storage.ts";

jobQueueContract("MemoryQueue", (setup) => new MemoryQueue(setup));

const T0 = Date.UTC(2026, 10, 1);
const LEASE = 30_000;

function attempt(at: number, status: number): Attempt {
  return {
    at,
    outcome: status === 200 ? "success" : "failure",
    status,
    latencyMs: 3,
    error: status === 200 ? null : `HTTP ${status}`,
  };
}

const { open, reopen } = journaledStores<MemoryQueue, QueueChange>();

function journaled(
  setup: MemoryQueueOptions = {},
  compactAboveBytes?: number,
): Promise<MemoryQueue> {
  return open(
    (snapshot, records, sink) => MemoryQueue.restore(snapshot, records, { ...setup, sink }),
    compactAboveBytes,
  );
}

jobQueueContract("MemoryQueue on a journal", (setup) => journaled(setup));
jobQueueContract(
  "MemoryQueue on a journal that compacts after every few changes",
  (setup) => journaled(setup, 600),
);

describe("MemoryQueue state over a restart (exportState, restore, the journal)", () => {
  /** A queue with a job in every state, a replayed dead letter and an idempotency key. */
  async function busy(queue = new MemoryQueue()): Promise<MemoryQueue> {
    for (
      const job of ["leased", "delayed", "delivered", "dead", "dead-first", "replayed"].map((m) =>
        makeJob(m)
      )
    ) {
      await queue.enqueue({ tenantId: "acme", messageId: job.messageId, jobs: [job] });
    }
    const leases = await queue.claim({ now: T0, limit: 6, leaseMs: LEASE });
    const by = (message: string) => leases.find((lease) => lease.job.messageId === message)!;
    await queue.retry(by("delayed"), attempt(T0, 500), T0 + 5000);
    await queue.ack(by("delivered"), attempt(T0, 200));
    await queue.bury(by("dead-first"), {
      attempt: attempt(T0, 500),
      reason: "attempts ran out",
      at: T0 + 1,
    });
    await queue.bury(by("dead"), {
      attempt: attempt(T0, 500),
      reason: "the endpoint was deleted",
      at: T0 + 2,
    });
    await queue.bury(by("replayed"), { reason: "no attempt", at: T0 + 3 });
    assert.equal(await queue.replay("acme", { jobId: "replayed.ep1" }, T0 + 4), 1);
    await queue.enqueue({ tenantId: "acme", messageId: "ready", jobs: [makeJob("ready")] });
    await queue.enqueue({
      tenantId: "globex",
      messageId: "fan",
      jobs: [makeJob("fan", "a", "globex"), makeJob("fan", "b", "globex")],
      idempotency: {
        key: "order-1",
        answer: { bodyHash: "h", messageId: "fan", response: "{}" },
        expiresAt: T0 + 60_000,
      },
    });
    return queue;
  }

  const MESSAGES = ["ready", "leased", "delayed", "delivered", "dead", "dead-first", "replayed"];

  /** Checks that `after` holds what `before` did, its leases void. */
  async function assertCarried(before: MemoryQueue, after: MemoryQueue): Promise<void> {
    assert.deepEqual(await after.depth(T0), { ready: 5, delayed: 1, leased: 0, dead: 2 });
    for (const message of MESSAGES) {
      const [was] = await before.message("acme", message);
      const [now] = await after.message("acme", message);
      assert.deepEqual(
        now,
        { ...was!, state: was!.state === "leased" ? "ready" : was!.state },
        message,
      );
    }
    assert.deepEqual(
      (await after.deadLetters("acme", { limit: 5 })).map((job) => [job.messageId, job.reason]),
      [
        ["dead", "the endpoint was deleted"],
        ["dead-first", "attempts ran out"],
      ],
      "newest first, as before",
    );
    const log = async (queue: MemoryQueue) =>
      (await queue.messages("acme", { limit: 100 })).messages.map((jobs) =>
        jobs.map((
          job,
        ) => [job.id, job.state === "leased" ? "ready" : job.state, job.attempts.length])
      );
    assert.deepEqual(await log(after), await log(before), "the message log, in its order");
    assert.deepEqual((await log(after)).length, MESSAGES.length);
    assert.deepEqual(await after.attemptStats("acme", 0), [{
      endpointId: "ep1",
      attempts: 4,
      successes: 1,
    }], "the attempt counts");
    const again = await after.enqueue({
      tenantId: "globex",
      messageId: "other",
      jobs: [makeJob("other", "a", "globex")],
      idempotency: {
        key: "order-1",
        answer: { bodyHash: "h", messageId: "other", response: "{}" },
        expiresAt: T0,
      },
    });
    assert.deepEqual(again, {
      accepted: false,
      previous: { bodyHash: "h", messageId: "fan", response: "{}" },
    });
    const claimed = await after.claim({ now: T0 + 5000, limit: 10, leaseMs: LEASE });
    assert.deepEqual(claimed.map((lease) => lease.job.id).sort(), [
      "delayed.ep1",
      "fan.a",
      "fan.b",
      "leased.ep1",
      "ready.ep1",
      "replayed.ep1",
    ]);
    assert.equal(
      claimed.find((lease) => lease.job.messageId === "delayed")!.job.attempts.length,
      1,
    );
    assert.equal(claimed.find((lease) => lease.job.messageId === "replayed")!.job.dueAt, T0 + 4);
  }

  it("carries every job, its state and attempts, the dead letters' order and idempotency keys over in its exported state", async () => {
    const before = await busy();
    await assertCarried(
      before,
      MemoryQueue.restore(JSON.parse(JSON.stringify(before.exportState())), []),
    );
  });

  it("rebuilds the same queue from its journal alone", async () => {
    const before = await busy(await journaled());
    await assertCarried(before, await reopen(before));
  });

  it("rebuilds the same queue from a journal that compacted along the way, twice over", async () => {
    const before = await busy(await journaled({}, 600));
    const after = await reopen(before);
    await assertCarried(before, after);
    await assertCarried(before, await reopen(after));
  });

  it("restores a snapshot written before attempt counts were kept, counting from then on", async () => {
    const { stats: _stats, ...older } = (await busy()).exportState();
    const after = MemoryQueue.restore(JSON.parse(JSON.stringify(older)), []);
    assert.deepEqual(await after.attemptStats("acme", 0), []);
    assert.equal((await after.messages("acme", { limit: 100 })).messages.length, MESSAGES.length);
    assert.throws(
      () => MemoryQueue.restore({ ...older, stats: [{ tenantId: "acme" }] }, []),
      TypeError,
    );
  });

  it("keeps the retention of what it restores: delivered jobs and dead letters still expire", async () => {
    const after = MemoryQueue.restore((await busy()).exportState(), [], {
      deliveredRetentionMs: 1000,
      deadRetentionMs: 1000,
    });
    await after.sweep(T0 + 2000);
    assert.deepEqual(await after.message("acme", "delivered"), []);
    assert.deepEqual(await after.deadLetters("acme", { limit: 5 }), []);
    assert.equal((await after.message("acme", "ready")).length, 1);
  });

  it("answers an enqueue only once its sink has the change, and fails it when the sink does", async () => {
    let release: (() => void) | undefined;
    const recorded: QueueChange[] = [];
    const queue = new MemoryQueue({
      sink: {
        record: (change) => {
          recorded.push(change);
          return new Promise<void>((resolve) => (release = resolve));
        },
      },
    });
    let answered = false;
    const accepted = queue.enqueue({ tenantId: "acme", messageId: "m1", jobs: [makeJob("m1")] })
      .then((result) => ((answered = true), result));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false, "not answered before the sink has it");
    assert.deepEqual(recorded.map((change) => change.op), ["enqueue"]);
    release!();
    assert.deepEqual(await accepted, { accepted: true });
    const failing = new MemoryQueue({
      sink: { record: () => Promise.reject(new Error("disk full")) },
    });
    await assert.rejects(
      failing.enqueue({ tenantId: "acme", messageId: "m2", jobs: [makeJob("m2")] }),
      /disk full/,
    );
  });

  it("records no claim or release: after a restart such jobs are simply due again", async () => {
    const recorded: QueueChange[] = [];
    const queue = new MemoryQueue({
      sink: { record: (change) => (recorded.push(change), Promise.resolve()) },
    });
    await queue.enqueue({ tenantId: "acme", messageId: "m1", jobs: [makeJob("m1")] });
    const [lease] = await queue.claim({ now: T0, limit: 1, leaseMs: LEASE });
    assert.equal(await queue.release(lease!, T0 + 10), true);
    assert.deepEqual(recorded.map((change) => change.op), ["enqueue"]);
    assert.deepEqual(
      (await MemoryQueue.restore(undefined, recorded).claim({ now: T0, limit: 1, leaseMs: LEASE }))
        .map((l) => l.job.id),
      ["m1.ep1"],
    );
  });

  it("refuses a snapshot or a change it did not write", () => {
    assert.throws(
      () => MemoryQueue.restore({ version: 2, jobs: [], idempotency: [] }, []),
      TypeError,
    );
    assert.throws(() => MemoryQueue.restore(undefined, [{ op: "drop" }]), TypeError);
    assert.throws(
      () =>
        MemoryQueue.restore(undefined, [{
          op: "ack",
          job: "never.queued",
          attempt: attempt(T0, 200),
        }]),
      /never queued/,
    );
  });

  it("refuses a lease it did not make", async () => {
    const queue = await busy();
    await queue.enqueue({ tenantId: "acme", messageId: "more", jobs: [makeJob("more")] });
    const [lease] = await queue.claim({ now: T0, limit: 1, leaseMs: LEASE });
    assert.equal(
      await queue.ack(
        { job: lease!.job, token: lease!.token, expiresAt: lease!.expiresAt },
        attempt(T0, 200),
      ),
      false,
    );
    assert.equal(await queue.ack(lease!, attempt(T0, 200)), true);
  });
});

describe("MemoryQueue retention", () => {
  it("forgets a message queued under an id other than its jobs' (as KafkaQueue's local queue queues them), so the id can be queued again", async () => {
    const queue = new MemoryQueue({ maxDelivered: 0, deliveredRetentionMs: 0 });
    const place = "unit.jobs/0/7";
    await queue.enqueue({ tenantId: "acme", messageId: place, jobs: [makeJob("m0")] });
    const [lease] = await queue.claim({ now: T0, limit: 1, leaseMs: LEASE });
    assert.equal(await queue.ack(lease!, attempt(T0, 200)), true);
    await queue.sweep(T0 + 1);
    assert.deepEqual(await queue.message("acme", place), []);
    assert.deepEqual(
      await queue.enqueue({ tenantId: "acme", messageId: place, jobs: [makeJob("m0")] }),
      { accepted: true },
      "the id was forgotten with its job",
    );
  });
});
