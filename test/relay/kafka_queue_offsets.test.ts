// KafkaQueue's bookkeeping of offsets and paused partitions, over a scripted
// log (no broker): what it commits when, and when it stops and resumes
// reading a partition.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type {
  KafkaBatch,
  KafkaLog,
  KafkaRecordOut,
  KafkaSubscribeOptions,
} from "../../lib/storage/kafka_log.ts";
import { KafkaQueue, kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import { makeJob } from "../_contracts/job_queue.ts";

const TOPICS = kafkaTopics("unit");
const NOW = Date.UTC(2026, 10, 1);
const OK = { at: NOW, outcome: "success", status: 200, latencyMs: 1, error: null } as const;
const FAILED = {
  at: NOW,
  outcome: "failure",
  status: 500,
  latencyMs: 1,
  error: "HTTP 500",
} as const;

/** A log of one partition per topic that records what the queue does with it. */
class ScriptedLog implements KafkaLog {
  readonly produced: KafkaRecordOut[] = [];
  readonly commits: { topic: string; partition: number; offset: number }[][] = [];
  readonly paused: string[] = [];
  readonly resumed: string[] = [];
  work: KafkaSubscribeOptions | undefined;
  /** While set, appends fail (the brokers are away). */
  away = false;
  #offsets = new Map<string, number>();

  produce(records: readonly KafkaRecordOut[]): Promise<number[]> {
    if (this.away) return Promise.reject(new Error("Kafka did not acknowledge in time"));
    this.produced.push(...records);
    return Promise.resolve(records.map((record) => {
      const next = this.#offsets.get(record.topic) ?? 0;
      this.#offsets.set(record.topic, next + 1);
      return next;
    }));
  }

  subscribe(options: KafkaSubscribeOptions) {
    if (options.topics.includes(TOPICS.jobs)) this.work = options;
    options.onAssign(new Map(options.topics.map((topic) => [topic, [0]])));
    return Promise.resolve({
      pause: (topic: string, partition: number) => void this.paused.push(`${topic}/${partition}`),
      resume: (topic: string, partition: number) => void this.resumed.push(`${topic}/${partition}`),
      commit: (offsets: readonly { topic: string; partition: number; offset: number }[]) => {
        this.commits.push([...offsets]);
        return Promise.resolve();
      },
      close: () => Promise.resolve(),
    });
  }

  partitions(): Promise<number> {
    return Promise.resolve(1);
  }

  ends(): Promise<Map<number, number>> {
    return Promise.resolve(new Map());
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  /** Hands the queue jobs records as if fetched, from `from` on. */
  deliver(topic: string, from: number, messages: readonly string[]): void {
    const batch: KafkaBatch = {
      topic,
      partition: 0,
      records: messages.map((message, i) => ({
        offset: from + i,
        key: "acme",
        value: JSON.stringify({ rev: 0, job: makeJob(message) }),
      })),
    };
    this.work!.onBatch(batch);
  }

  /** The offsets committed so far for a topic, in order. */
  committed(topic: string): number[] {
    return this.commits.flat().filter((entry) => entry.topic === topic).map((entry) =>
      entry.offset
    );
  }
}

/** The queue's commit timer, fired by hand. */
class ManualTimer {
  #tasks: (() => void)[] = [];

  set = (task: () => void): () => void => {
    this.#tasks.push(task);
    return () => {
      this.#tasks = this.#tasks.filter((other) => other !== task);
    };
  };

  /** Runs the timers set so far and lets the commits they start finish. */
  async fire(): Promise<void> {
    const tasks = this.#tasks;
    this.#tasks = [];
    for (const task of tasks) task();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** What `promise` settles with before the next turn of the event loop; undefined if it is still pending then. */
async function settlesAtOnce<T>(promise: Promise<T>): Promise<{ value: T } | undefined> {
  let settled: { value: T } | undefined;
  void promise.then((value) => (settled = { value }));
  await new Promise((resolve) => setImmediate(resolve));
  return settled;
}

describe("KafkaQueue offsets", () => {
  it("commits a record's offset only once its job is delivered, and past a job still in hand never", async () => {
    const log = new ScriptedLog();
    const timer = new ManualTimer();
    const queue = await KafkaQueue.open(log, {
      topics: TOPICS,
      instanceId: "a",
      setTimer: timer.set,
    });
    log.deliver(TOPICS.jobs, 0, ["m0", "m1", "m2"]);
    const leases = await queue.claim({ now: NOW, limit: 3, leaseMs: 30_000 });
    assert.deepEqual(leases.map((lease) => lease.job.messageId), ["m0", "m1", "m2"]);
    await timer.fire();
    assert.deepEqual(log.committed(TOPICS.jobs), [], "nothing handled, nothing committed");
    assert.equal(await queue.ack(leases[1]!, OK), true);
    await timer.fire();
    assert.deepEqual(
      log.committed(TOPICS.jobs),
      [],
      "m0 is still in hand: offset 0 holds the commit back",
    );
    assert.equal(await queue.ack(leases[0]!, OK), true);
    await timer.fire();
    assert.deepEqual(
      log.committed(TOPICS.jobs),
      [2],
      "m0 and m1 handled: the next record to read is 2",
    );
    await queue.close();
    assert.deepEqual(
      log.committed(TOPICS.jobs),
      [2],
      "m2 was never handled: close does not commit past it",
    );
  });

  it("commits a retried job's offset once it is appended to the retry topic, and a buried one's once it is on the dead-letter topic", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, { topics: TOPICS, instanceId: "a" });
    log.deliver(TOPICS.jobs, 0, ["m0", "m1"]);
    const [first, second] = await queue.claim({ now: NOW, limit: 2, leaseMs: 30_000 });
    assert.equal(await queue.retry(first!, FAILED, NOW + 5000), true);
    const retried = log.produced.find((record) => record.topic === TOPICS.retry);
    assert.ok(retried, "appended to the retry topic");
    assert.equal((JSON.parse(retried.value!) as { job: { dueAt: number } }).job.dueAt, NOW + 5000);
    assert.equal(
      await queue.bury(second!, { reason: "attempts ran out", at: NOW, attempt: FAILED }),
      true,
    );
    assert.ok(
      log.produced.some((record) => record.topic === TOPICS.dead && record.key === "acme"),
      "appended to the dead-letter topic, keyed by tenant",
    );
    await queue.close();
    assert.deepEqual(log.committed(TOPICS.jobs), [2]);
  });

  it("hands a job whose retry could not be appended out again when due, and commits it once appended", async () => {
    const log = new ScriptedLog();
    const timer = new ManualTimer();
    const queue = await KafkaQueue.open(log, {
      topics: TOPICS,
      instanceId: "a",
      setTimer: timer.set,
    });
    await queue.enqueue({ tenantId: "acme", messageId: "m0", jobs: [makeJob("m0")] });
    log.deliver(TOPICS.jobs, 0, ["m0"]);
    const [first] = await queue.claim({ now: NOW, limit: 1, leaseMs: 30_000 });
    log.away = true;
    await assert.rejects(queue.retry(first!, FAILED, NOW + 1000), /did not acknowledge/);
    // Before the sweep that would have forgotten the local queue's first copy.
    const [again] = await queue.claim({ now: NOW + 1000, limit: 1, leaseMs: 30_000 });
    assert.equal(again?.job.messageId, "m0", "in hand again once due");
    assert.deepEqual(
      (await queue.message("acme", "m0")).map((view) => view.state),
      ["leased"],
      "shown as in hand",
    );
    await assert.rejects(queue.retry(again!, FAILED, NOW + 2000), /did not acknowledge/);
    log.away = false;
    const [third] = await queue.claim({ now: NOW + 2000, limit: 1, leaseMs: 30_000 });
    assert.equal(third?.job.messageId, "m0", "and again");
    assert.equal(await queue.retry(third!, FAILED, NOW + 3000), true);
    await timer.fire();
    assert.deepEqual(log.committed(TOPICS.jobs), [1], "handed to the retry topic: committed");
    await queue.close();
  });

  it("holds a retry read before its due time without holding back the ones behind it", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, { topics: TOPICS, instanceId: "a" });
    const late = { rev: 1, job: { ...makeJob("late"), dueAt: NOW + 3_600_000 } };
    const soon = { rev: 1, job: { ...makeJob("soon"), dueAt: NOW + 1000 } };
    log.work!.onBatch({
      topic: TOPICS.retry,
      partition: 0,
      records: [{ offset: 0, key: "acme", value: JSON.stringify(late) }, {
        offset: 1,
        key: "acme",
        value: JSON.stringify(soon),
      }],
    });
    assert.deepEqual(await queue.claim({ now: NOW, limit: 5, leaseMs: 30_000 }), []);
    assert.equal(await queue.nextDue(), NOW + 1000);
    const [lease] = await queue.claim({ now: NOW + 1000, limit: 5, leaseMs: 30_000 });
    assert.equal(lease?.job.messageId, "soon", "the retry behind a later one went out when due");
    assert.equal(await queue.ack(lease!, OK), true);
    await queue.close();
    assert.deepEqual(
      log.committed(TOPICS.retry),
      [],
      "offset 0 (not due for an hour) holds the commit back: a restart reads both again",
    );
  });

  it("pauses a partition read far ahead and resumes it once half of that is handled", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, {
      topics: TOPICS,
      instanceId: "a",
      maxBufferedPerPartition: 4,
    });
    log.deliver(TOPICS.jobs, 0, ["m0", "m1", "m2"]);
    assert.deepEqual(log.paused, []);
    log.deliver(TOPICS.jobs, 3, ["m3"]);
    assert.deepEqual(
      log.paused,
      [`${TOPICS.jobs}/0`],
      "four read and not handled: the partition waits",
    );
    const leases = await queue.claim({ now: NOW, limit: 4, leaseMs: 30_000 });
    assert.equal(await queue.ack(leases[0]!, OK), true);
    assert.deepEqual(
      log.resumed.filter((entry) => entry.startsWith(TOPICS.jobs)),
      [],
      "three still in hand",
    );
    assert.equal(await queue.ack(leases[1]!, OK), true);
    assert.equal(await queue.ack(leases[2]!, OK), true);
    assert.ok(log.resumed.includes(`${TOPICS.jobs}/0`), "one left in hand: reading goes on");
    await queue.close();
  });

  it("skips records read again after a rebalance that kept the partition, and those the state says are done", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, { topics: TOPICS, instanceId: "a" });
    log.deliver(TOPICS.jobs, 0, ["m0", "m1"]);
    const [lease] = await queue.claim({ now: NOW, limit: 1, leaseMs: 30_000 });
    assert.equal(await queue.ack(lease!, OK), true);
    // The client starts again from the last commit (0) after a rebalance.
    log.work!.onAssign(new Map([[TOPICS.jobs, [0]], [TOPICS.retry, [0]]]));
    log.deliver(TOPICS.jobs, 0, ["m0", "m1"]);
    const again = await queue.claim({ now: NOW, limit: 5, leaseMs: 30_000 });
    assert.deepEqual(
      again.map((next) => next.job.messageId),
      ["m1"],
      "m0 is not sent twice, m1 once",
    );
    await queue.close();
  });

  it("commits nothing of a partition it held before until it has read it again, and never behind the group's commit", async () => {
    const log = new ScriptedLog();
    const timer = new ManualTimer();
    const queue = await KafkaQueue.open(log, {
      topics: TOPICS,
      instanceId: "a",
      setTimer: timer.set,
    });
    log.deliver(TOPICS.jobs, 0, ["m0", "m1", "m2", "m3"]);
    const leases = await queue.claim({ now: NOW, limit: 4, leaseMs: 30_000 });
    assert.equal(await queue.ack(leases[0]!, OK), true);
    await timer.fire();
    assert.deepEqual(log.committed(TOPICS.jobs), [1]);
    // Lost: another process reads the partition on and commits up to 50. Jobs in hand here are still delivered.
    log.work!.onAssign(new Map([[TOPICS.jobs, []], [TOPICS.retry, []]]));
    assert.equal(await queue.ack(leases[1]!, OK), true);
    assert.equal(await queue.ack(leases[2]!, OK), true);
    await timer.fire();
    // Held again: what this process read then (up to 4) is not where the group stands.
    log.work!.onAssign(new Map([[TOPICS.jobs, [0]], [TOPICS.retry, [0]]]));
    assert.equal(await queue.ack(leases[3]!, OK), true);
    await timer.fire();
    assert.deepEqual(
      log.committed(TOPICS.jobs),
      [1],
      "nothing committed while lost, nor from the old position",
    );
    log.deliver(TOPICS.jobs, 50, ["m50"]);
    const [next] = await queue.claim({ now: NOW, limit: 1, leaseMs: 30_000 });
    assert.equal(next?.job.messageId, "m50");
    assert.equal(await queue.ack(next!, OK), true);
    await timer.fire();
    assert.deepEqual(
      log.committed(TOPICS.jobs),
      [1, 51],
      "reading went on from the group's commit",
    );
    await queue.close();
  });

  // claim waits up to catchUpMs (here 30 s) to read back what this process appended; whether it waits shows
  // in whether it settles before the next turn of the event loop.
  const WAITS_LONG = { catchUpMs: 30_000 };

  it("waits to read back its own append on a partition it holds", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, { topics: TOPICS, instanceId: "a", ...WAITS_LONG });
    await queue.enqueue({ tenantId: "acme", messageId: "m0", jobs: [makeJob("m0")] });
    const claim = queue.claim({ now: NOW, limit: 5, leaseMs: 30_000 });
    assert.equal(await settlesAtOnce(claim), undefined, "offset 0 not read back yet: claim waits");
    log.deliver(TOPICS.jobs, 0, ["m0"]);
    assert.deepEqual((await claim).map((lease) => lease.job.messageId), ["m0"]);
    await queue.close();
  });

  it("does not wait for its own appends on a partition it no longer holds", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, { topics: TOPICS, instanceId: "a", ...WAITS_LONG });
    await queue.enqueue({ tenantId: "acme", messageId: "m0", jobs: [makeJob("m0")] });
    // A rebalance gives the partition to another process, which reads m0; and the append after it, too.
    log.work!.onAssign(new Map([[TOPICS.jobs, []], [TOPICS.retry, []]]));
    await queue.enqueue({ tenantId: "acme", messageId: "m1", jobs: [makeJob("m1")] });
    assert.deepEqual(await settlesAtOnce(queue.claim({ now: NOW, limit: 5, leaseMs: 30_000 })), {
      value: [],
    });
    assert.deepEqual(await settlesAtOnce(queue.nextDue()), { value: undefined });
    await queue.close();
  });

  it("does not wait for its own appends on a partition it paused", async () => {
    const log = new ScriptedLog();
    const queue = await KafkaQueue.open(log, {
      topics: TOPICS,
      instanceId: "a",
      maxBufferedPerPartition: 2,
      ...WAITS_LONG,
    });
    await queue.enqueue({
      tenantId: "acme",
      messageId: "m0",
      jobs: [makeJob("m0"), makeJob("m0", "ep2"), makeJob("m0", "ep3")],
    });
    log.deliver(TOPICS.jobs, 0, ["m0", "m1"]);
    assert.deepEqual(
      log.paused,
      [`${TOPICS.jobs}/0`],
      "two in hand: the partition waits, offset 2 unread",
    );
    const claimed = await settlesAtOnce(queue.claim({ now: NOW, limit: 5, leaseMs: 30_000 }));
    assert.deepEqual(claimed?.value.map((lease) => lease.job.messageId), ["m0", "m1"]);
    await queue.close();
  });
});
