import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { parseWebhookSecret, verifyWebhook } from "../../lib/crypto/mod.ts";
import { connectKafka, KafkaQueue } from "../../lib/relay/kafka/mod.ts";
import { kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import {
  type DeliveryResult,
  type Job,
  type JobQueue,
  MemoryQueue,
  RelayWorker,
  type RetrySchedule,
} from "../../lib/relay/mod.ts";
import { connectRedis, RedisQueue, type RedisScripts } from "../../lib/relay/redis/mod.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";
import { redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";
import { FakeClock, makeRegistry, ScriptedReceiver, SECRET, status } from "../_helpers/relay.ts";

const SCHEDULE: RetrySchedule = {
  kind: "fixed",
  delaysMs: [1000, 2000, 4000],
  maxAttempts: 4,
  jitter: 0,
};
const A = "http://a.example/hook";
const B = "http://b.example/hook";

function setup(
  options: { concurrency?: number; perEndpoint?: number; rate?: number; queue?: JobQueue } = {},
) {
  const clock = new FakeClock();
  const registry = makeRegistry(clock);
  registry.createEndpoint("acme", { id: "a", url: A, events: ["*"], secret: SECRET });
  registry.createEndpoint("globex", {
    id: "b",
    url: B,
    events: ["*"],
    secret: SECRET,
    ...(options.rate === undefined ? {} : { rate_limit_per_second: options.rate }),
  });
  const queue = options.queue ?? new MemoryQueue();
  const receiver = new ScriptedReceiver();
  const dead: string[] = [];
  const worker = new RelayWorker({
    queue,
    registry,
    deliver: receiver.deliver,
    schedule: SCHEDULE,
    now: clock.now,
    random: () => 0.5,
    setTimer: clock.setTimer,
    concurrency: options.concurrency ?? 8,
    perEndpointConcurrency: options.perEndpoint ?? 4,
    pollIntervalMs: 60_000,
    onDead: (job, reason) => dead.push(`${job.id}: ${reason}`),
  });
  let n = 0;
  /** A new message of the tenant, for its one endpoint, due now. */
  function message(
    tenant: "acme" | "globex",
  ): { tenantId: string; messageId: string; jobs: Job[] } {
    const messageId = `msg_${++n}`;
    const endpointId = tenant === "acme" ? "a" : "b";
    return {
      tenantId: tenant,
      messageId,
      jobs: [{
        id: `${messageId}.${endpointId}`,
        messageId,
        tenantId: tenant,
        endpointId,
        event: "user.created",
        body: `{"n":${n}}`,
        contentType: "application/json",
        createdAt: clock.time,
        dueAt: clock.time,
        attempts: [],
      }],
    };
  }
  /** Queues `count` messages and lets the worker take them; with `hang`, does not wait for deliveries that hang. */
  async function send(tenant: "acme" | "globex", count = 1, hang = false): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const batch = message(tenant);
      await queue.enqueue(batch);
      ids.push(batch.messageId);
    }
    worker.notify();
    await (hang ? turns(5) : worker.idle());
    return ids;
  }
  async function advance(ms: number): Promise<void> {
    await clock.advance(ms, () => worker.idle());
  }
  worker.start();
  return { clock, registry, queue, receiver, worker, dead, message, send, advance };
}

/** A memory queue that counts its claims. */
class CountingQueue extends MemoryQueue {
  claims = 0;
  override claim(options: Parameters<MemoryQueue["claim"]>[0]) {
    this.claims++;
    return super.claim(options);
  }
}

/** Lets the event loop go round a few times, for work that does not finish. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
}

async function stateOf(queue: JobQueue, tenant: string, messageId: string) {
  const [job] = await queue.message(tenant, messageId);
  assert.ok(job, `message ${messageId} is known`);
  return job;
}

/**
 * Tenant acme's endpoint fails every attempt; a message of tenant globex
 * queued after acme's 20 goes out before any of their retries.
 */
async function failingEndpointKeepsOthersGoing(queue?: JobQueue): Promise<void> {
  const t = setup({ concurrency: 2, perEndpoint: 2, ...(queue === undefined ? {} : { queue }) });
  t.receiver.on(A, () => status(500));
  t.receiver.on(B, () => status(200));
  await t.send("acme", 20);
  await t.advance(500);
  const [b] = await t.send("globex");
  const bIndex = t.receiver.order.indexOf(B);
  assert.equal(bIndex, 20, "delivered right after the 20 first attempts, before any retry");
  assert.equal((await stateOf(t.queue, "globex", b!)).state, "delivered");
  await t.advance(500);
  assert.equal(t.receiver.order.filter((url) => url === A).length, 40, "the retries came when due");
  await t.worker.stop();
}

describe("RelayWorker on the Kafka queue", { skip: kafkaSkip }, () => {
  let kafka: TestKafka;
  let queue: KafkaQueue | undefined;
  before(async () => {
    kafka = await startKafka(
      Object.fromEntries(Object.values(kafkaTopics("worker")).map((topic) => [topic, 4])),
    );
  });
  after(async () => {
    await queue?.close();
    await kafka.stop();
  });

  it("does not let a failing endpoint's retries delay another tenant's messages", async () => {
    const log = await connectKafka(kafka.brokers, { sessionTimeoutMs: 6000 });
    queue = await KafkaQueue.open(log, {
      topics: kafkaTopics("worker"),
      groupId: "worker",
      instanceId: "a",
    });
    await failingEndpointKeepsOthersGoing(queue);
  });
});

describe("RelayWorker on the Redis queue", { skip: redisSkip }, () => {
  let redis: TestRedis;
  const connections: RedisScripts[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await Promise.allSettled(connections.map((connection) => connection.close()));
    await redis.stop();
  });

  it("does not let a failing endpoint's retries delay another tenant's messages", async () => {
    const connection = await connectRedis(redis.url);
    connections.push(connection);
    await failingEndpointKeepsOthersGoing(
      new RedisQueue(connection, { prefix: `{worker-${process.pid}}` }),
    );
  });
});

describe("RelayWorker", () => {
  it("delivers with Standard Webhooks headers that verify with the endpoint's secret", async () => {
    const t = setup();
    t.receiver.on(A, () => status(204));
    const [id] = await t.send("acme");
    const [request] = t.receiver.requests;
    assert.ok(request);
    assert.equal(request.headers["webhook-id"], id);
    assert.equal(request.headers["content-type"], "application/json");
    verifyWebhook(
      [parseWebhookSecret(SECRET)],
      {
        id: request.headers["webhook-id"]!,
        timestamp: request.headers["webhook-timestamp"]!,
        signature: request.headers["webhook-signature"]!,
      },
      request.body,
      { now: Math.floor(t.clock.time / 1000) },
    );
    const job = await stateOf(t.queue, "acme", id!);
    assert.equal(job.state, "delivered");
    assert.deepEqual(job.attempts.map((attempt) => [attempt.outcome, attempt.status]), [[
      "success",
      204,
    ]]);
  });

  it("retries a failing receiver on the schedule with the same webhook-id, until it succeeds", async () => {
    const t = setup();
    t.receiver.on(A, (n) => (n <= 2 ? status(500) : status(200)));
    const [id] = await t.send("acme");
    assert.equal((await stateOf(t.queue, "acme", id!)).state, "delayed");
    await t.advance(999);
    assert.equal(t.receiver.requests.length, 1, "nothing before the first delay");
    await t.advance(1);
    assert.equal(t.receiver.requests.length, 2);
    await t.advance(2000);
    assert.equal(t.receiver.requests.length, 3);
    const job = await stateOf(t.queue, "acme", id!);
    assert.equal(job.state, "delivered");
    assert.deepEqual(job.attempts.map((attempt) => attempt.status), [500, 500, 200]);
    assert.deepEqual(
      new Set(t.receiver.requests.map((request) => request.headers["webhook-id"])),
      new Set([id]),
    );
  });

  it("moves a job whose attempts ran out to the dead letters", async () => {
    const t = setup();
    t.receiver.on(A, () => ({ kind: "error", message: "ECONNRESET" }));
    const [id] = await t.send("acme");
    await t.advance(1000);
    await t.advance(2000);
    await t.advance(4000);
    const job = await stateOf(t.queue, "acme", id!);
    assert.equal(job.state, "dead");
    assert.equal(job.reason, "all 4 attempts failed");
    assert.equal(job.attempts.length, 4);
    assert.deepEqual(t.dead, [`${id}.a: all 4 attempts failed`]);
  });

  it("disables the endpoint on 410 Gone and buries the job", async () => {
    const t = setup();
    t.receiver.on(A, () => status(410));
    const [id] = await t.send("acme");
    assert.equal((await stateOf(t.queue, "acme", id!)).state, "dead");
    const endpoint = t.registry.endpoint("acme", "a");
    assert.equal(endpoint?.enabled, false);
    assert.match(endpoint?.disabledReason ?? "", /410/);
    const [next] = await t.send("acme");
    assert.equal(t.receiver.requests.length, 1, "a disabled endpoint gets nothing more");
    assert.match((await stateOf(t.queue, "acme", next!)).reason ?? "", /disabled/);
  });

  for (const code of [429, 503]) {
    it(`waits the Retry-After of a ${code}, at most the schedule's longest delay`, async () => {
      const t = setup();
      t.receiver.on(
        A,
        (n) => (n === 1 ? status(code, "3") : n === 2 ? status(code, "86400") : status(200)),
      );
      const [id] = await t.send("acme");
      let job = await stateOf(t.queue, "acme", id!);
      assert.equal(job.attempts[0]?.outcome, "throttled");
      assert.equal(job.dueAt, t.clock.time + 3000);
      await t.advance(3000);
      job = await stateOf(t.queue, "acme", id!);
      assert.equal(job.dueAt, t.clock.time + 4000, "a day is capped at the 4 s longest delay");
      await t.advance(4000);
      assert.equal((await stateOf(t.queue, "acme", id!)).state, "delivered");
    });
  }

  it("counts a redirect as a failure and never follows it", async () => {
    const t = setup();
    t.receiver.on(A, () => status(302));
    const [id] = await t.send("acme");
    const job = await stateOf(t.queue, "acme", id!);
    assert.equal(job.attempts[0]?.outcome, "failure");
    assert.match(job.attempts[0]?.error ?? "", /redirects are not followed/);
    assert.equal(t.receiver.requests.length, 1);
  });

  const failures: { name: string; result: DeliveryResult; outcome: string }[] = [
    {
      name: "a timeout",
      result: { kind: "timeout", message: "No answer within 15000 ms" },
      outcome: "timeout",
    },
    {
      name: "a refused address",
      result: { kind: "blocked", message: "address 10.0.0.1 is refused" },
      outcome: "blocked",
    },
    {
      name: "a closed connection",
      result: { kind: "error", message: "socket hang up" },
      outcome: "failure",
    },
  ];
  for (const c of failures) {
    it(`records ${c.name} on the attempt and retries`, async () => {
      const t = setup();
      t.receiver.on(A, () => c.result);
      const [id] = await t.send("acme");
      const job = await stateOf(t.queue, "acme", id!);
      assert.equal(job.state, "delayed");
      assert.deepEqual(
        [job.attempts[0]?.outcome, job.attempts[0]?.status, job.attempts[0]?.error],
        [c.outcome, null, c.result.kind === "response" ? null : c.result.message],
      );
    });
  }

  it("renews the lease of a delivery that runs past it, every second, so no other process takes the job; once it ends the beats stop", async () => {
    const t = setup();
    let answer: (result: DeliveryResult) => void = () => {};
    t.receiver.on(A, () => new Promise<DeliveryResult>((resolve) => (answer = resolve)));
    const [id] = await t.send("acme", 1, true);
    const leases: number[] = [];
    const renew = t.queue.renew.bind(t.queue);
    t.queue.renew = async (held, expiresAt) => {
      leases.push(expiresAt - t.clock.time);
      return renew(held, expiresAt);
    };
    // The delivery hangs, so the clock moves without waiting for the worker to be idle.
    await t.clock.advance(20_000, () => turns(3));
    assert.equal(leases.length, 20, "one renewal a second");
    assert.ok(leases.every((ms) => ms === 5000), "each to 5 s ahead");
    assert.deepEqual(
      await t.queue.claim({ now: t.clock.time, limit: 10, leaseMs: 5000 }),
      [],
      "still held, 15 s past its first lease",
    );
    answer(status(200));
    await t.worker.idle();
    assert.equal((await stateOf(t.queue, "acme", id!)).state, "delivered");
    await t.advance(10_000);
    assert.equal(leases.length, 20, "no renewal once nothing is held");
  });

  it("buries the jobs of a deleted endpoint without sending them, once the endpoint has had 5 s to reach this process", async () => {
    const t = setup();
    t.registry.deleteEndpoint("acme", "a");
    const [id] = await t.send("acme");
    assert.equal(t.receiver.requests.length, 0);
    assert.notEqual((await stateOf(t.queue, "acme", id!)).state, "dead", "not buried at once");
    await t.advance(4900);
    assert.notEqual(
      (await stateOf(t.queue, "acme", id!)).state,
      "dead",
      "still waiting after 4.9 s",
    );
    await t.advance(600);
    assert.equal(t.receiver.requests.length, 0);
    assert.equal((await stateOf(t.queue, "acme", id!)).reason, "the endpoint was deleted");
  });

  it("delivers a job whose endpoint reaches this process after the job (made on another process a moment ago)", async () => {
    const t = setup();
    t.receiver.on(A, () => status(200));
    const endpoint = t.registry.endpoint("acme", "a")!;
    t.registry.deleteEndpoint("acme", "a");
    const [id] = await t.send("acme");
    await t.advance(800);
    assert.equal(t.receiver.requests.length, 0);
    t.registry.put(endpoint);
    await t.advance(1000);
    assert.equal(t.receiver.requests.length, 1);
    assert.equal((await stateOf(t.queue, "acme", id!)).state, "delivered");
  });

  it("keeps a slow endpoint to its concurrency cap while another endpoint's message goes through", async () => {
    const t = setup({ concurrency: 4, perEndpoint: 2 });
    const hanging: ((result: DeliveryResult) => void)[] = [];
    t.receiver.on(
      A,
      (n) => n <= 2 ? new Promise<DeliveryResult>((resolve) => hanging.push(resolve)) : status(200),
    );
    t.receiver.on(B, () => status(200));
    await t.send("acme", 10, true);
    const [b] = await t.send("globex", 1, true);
    assert.equal(hanging.length, 2, "two deliveries in flight to the slow endpoint, no more");
    assert.deepEqual(
      t.receiver.order,
      [A, A, B],
      "the healthy endpoint's message went out while the slow one hung",
    );
    assert.equal((await stateOf(t.queue, "globex", b!)).state, "delivered");
    assert.deepEqual(await t.queue.depth(t.clock.time), {
      ready: 8,
      delayed: 0,
      leased: 2,
      dead: 0,
    }, "the slow endpoint's other jobs wait ready");
    for (const resolve of hanging.splice(0)) resolve(status(200));
    await t.worker.idle();
    assert.equal(
      t.receiver.order.filter((url) => url === A).length,
      10,
      "the rest went out as soon as the slow ones finished",
    );
    assert.deepEqual(await t.queue.depth(t.clock.time), {
      ready: 0,
      delayed: 0,
      leased: 0,
      dead: 0,
    });
  });

  it("does not let a failing endpoint's retries delay another tenant's messages", () =>
    failingEndpointKeepsOthersGoing());

  it("fills the slots of the deliveries that finish in one turn with one claim", async () => {
    const queue = new CountingQueue();
    const t = setup({ concurrency: 8, perEndpoint: 8, queue });
    const hanging: ((result: DeliveryResult) => void)[] = [];
    t.receiver.on(
      A,
      (n) => n <= 8 ? new Promise<DeliveryResult>((resolve) => hanging.push(resolve)) : status(200),
    );
    await t.send("acme", 16, true);
    assert.equal(hanging.length, 8, "eight in flight, the other eight ready");
    const before = queue.claims;
    // Eight answers in one turn of the event loop, each in a callback of its own, as a loaded
    // relay reads them from its sockets (promise jobs run between them, so each answer's
    // bookkeeping is done before the next is read).
    for (const resolve of hanging.splice(0)) setImmediate(() => resolve(status(200)));
    await turns(1);
    await t.worker.idle();
    assert.equal(t.receiver.requests.length, 16, "every message went out");
    // One claim fills the eight freed slots with the other eight jobs, and one more, once those
    // finish (in one turn too), finds the queue empty; a claim for each finished delivery made 16.
    assert.ok(queue.claims - before <= 3, `${queue.claims - before} claims for 16 deliveries`);
    await t.worker.stop();
  });

  it("takes the messages queued in one turn with one claim", async () => {
    const queue = new CountingQueue();
    const t = setup({ concurrency: 8, perEndpoint: 8, queue });
    const hanging: ((result: DeliveryResult) => void)[] = [];
    t.receiver.on(A, () => new Promise<DeliveryResult>((resolve) => hanging.push(resolve)));
    await t.worker.idle();
    const before = queue.claims;
    // Eight webhooks taken in one turn, each in a callback of its own, each telling the worker.
    for (let i = 0; i < 8; i++) {
      setImmediate(() => {
        void queue.enqueue(t.message("acme"));
        t.worker.notify();
      });
    }
    await turns(3);
    assert.equal(t.receiver.requests.length, 8, "all eight on their way");
    // A look each made eight claims.
    assert.equal(queue.claims - before, 1);
    for (const resolve of hanging.splice(0)) resolve(status(200));
    await t.worker.stop();
  });

  it("holds an endpoint to its rate limit per second", async () => {
    const t = setup({ rate: 2 });
    t.receiver.on(B, () => status(200));
    await t.send("globex", 5);
    assert.equal(t.receiver.requests.length, 2, "a burst of two, then wait");
    await t.advance(500);
    assert.equal(t.receiver.requests.length, 3);
    await t.advance(1000);
    assert.equal(t.receiver.requests.length, 5);
    const depth = await t.queue.depth(t.clock.time);
    assert.deepEqual(depth, { ready: 0, delayed: 0, leased: 0, dead: 0 });
  });

  it("stops claiming on stop() once the deliveries in flight are recorded", async () => {
    const t = setup();
    let finish: ((result: DeliveryResult) => void) | undefined;
    t.receiver.on(A, () => new Promise<DeliveryResult>((resolve) => (finish = resolve)));
    const [id] = await t.send("acme", 1, true);
    const stopped = t.worker.stop();
    finish!(status(200));
    await stopped;
    assert.equal((await stateOf(t.queue, "acme", id!)).state, "delivered");
    const [later] = await t.send("acme");
    assert.equal(
      (await stateOf(t.queue, "acme", later!)).state,
      "ready",
      "a stopped worker claims nothing",
    );
  });
});
