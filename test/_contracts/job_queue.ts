// The contract every JobQueue implementation passes: memory now, Redis and
// Kafka next. Each implementation's test file calls jobQueueContract with a
// factory; every test builds its own queue, so none depends on another.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Attempt, endpointKey, type Job, type JobQueue, type Lease } from "../../lib/relay/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

/** What a factory gets. */
export interface QueueSetup {
  readonly capacity: number;
  readonly deliveredRetentionMs: number;
  readonly deadRetentionMs: number;
}

const T0 = Date.UTC(2026, 10, 1);
const LEASE = 30_000;

/** A job of message `message` to endpoint `endpoint` of tenant `tenant`. */
export function makeJob(message: string, endpoint = "ep1", tenant = "acme", at = T0): Job {
  return {
    id: `${message}.${endpoint}`,
    messageId: message,
    tenantId: tenant,
    endpointId: endpoint,
    event: "user.created",
    body: `{"type":"user.created","data":{"m":"${message}"}}`,
    contentType: "application/json",
    createdAt: at,
    dueAt: at,
    attempts: [],
  };
}

function attempt(at: number, outcome: Attempt["outcome"] = "failure", status: number | null = 500): Attempt {
  return { at, outcome, status, latencyMs: 5, error: outcome === "success" ? null : `HTTP ${status}` };
}

function single(tenant: string, message: string, endpoints: readonly string[] = ["ep1"], at = T0) {
  return { tenantId: tenant, messageId: message, jobs: endpoints.map((endpoint) => makeJob(message, endpoint, tenant, at)) };
}

async function claimOne(queue: JobQueue, now: number): Promise<Lease> {
  const [lease, ...rest] = await queue.claim({ now, limit: 1, leaseMs: LEASE });
  assert.ok(lease, `a job is due at ${now - T0} ms`);
  assert.equal(rest.length, 0);
  return lease;
}

/**
 * Runs the JobQueue contract.
 * @param name the implementation's name
 * @param make builds an empty queue
 */
export function jobQueueContract(name: string, make: (setup: QueueSetup) => Promise<JobQueue> | JobQueue): void {
  function fresh(setup: Partial<QueueSetup> = {}): Promise<JobQueue> {
    return Promise.resolve(make({ capacity: 1000, deliveredRetentionMs: 60_000, deadRetentionMs: 120_000, ...setup }));
  }

  describe(`JobQueue contract: ${name}`, () => {
    it("claims queued jobs in the order they came, at most the limit, each once", async () => {
      const queue = await fresh();
      for (const m of ["m1", "m2", "m3"]) assert.deepEqual(await queue.enqueue(single("acme", m)), { accepted: true });
      const first = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      assert.deepEqual(first.map((lease) => lease.job.messageId), ["m1", "m2"]);
      const second = await queue.claim({ now: T0, limit: 5, leaseMs: LEASE });
      assert.deepEqual(second.map((lease) => lease.job.messageId), ["m3"]);
      assert.deepEqual(await queue.claim({ now: T0, limit: 5, leaseMs: LEASE }), []);
      assert.deepEqual(await queue.depth(T0), { ready: 0, delayed: 0, leased: 3, dead: 0 });
      await queue.close();
    });

    it("queues one job per endpoint of a message, and shows them by message", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      const jobs = await queue.message("acme", "m1");
      assert.deepEqual(jobs.map((job) => [job.endpointId, job.state]).sort(), [["ep1", "ready"], ["ep2", "ready"]]);
      assert.deepEqual(await queue.message("globex", "m1"), [], "another tenant sees nothing");
      assert.deepEqual(await queue.message("acme", "unknown"), []);
    });

    it("refuses a message id that is queued already, whatever the tenant, and keeps the first", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      await assert.rejects(queue.enqueue(single("globex", "m1")), { name: "TypeError" });
      assert.deepEqual(await queue.depth(T0), { ready: 1, delayed: 0, leased: 0, dead: 0 });
      assert.equal((await queue.message("acme", "m1")).length, 1);
    });

    it("acknowledges a delivery: the job is delivered with its attempt and never claimed again", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      const lease = await claimOne(queue, T0);
      assert.equal(await queue.ack(lease, attempt(T0, "success", 200)), true);
      const [job] = await queue.message("acme", "m1");
      assert.equal(job?.state, "delivered");
      assert.deepEqual(job?.attempts.map((a) => a.status), [200]);
      assert.deepEqual(await queue.claim({ now: T0 + 10 * LEASE, limit: 5, leaseMs: LEASE }), []);
      assert.deepEqual(await queue.depth(T0), { ready: 0, delayed: 0, leased: 0, dead: 0 });
      assert.equal(await queue.ack(lease, attempt(T0, "success", 200)), false, "a second ack does nothing");
    });

    it("holds a retried job until its due time, with the failed attempt recorded", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      const lease = await claimOne(queue, T0);
      assert.equal(await queue.retry(lease, attempt(T0), T0 + 5000), true);
      assert.deepEqual(await queue.depth(T0 + 4999), { ready: 0, delayed: 1, leased: 0, dead: 0 });
      assert.deepEqual(await queue.claim({ now: T0 + 4999, limit: 5, leaseMs: LEASE }), []);
      assert.equal(await queue.nextDue(), T0 + 5000);
      const again = await claimOne(queue, T0 + 5000);
      assert.equal(again.job.attempts.length, 1);
      assert.equal(again.job.dueAt, T0 + 5000);
      assert.equal((await queue.message("acme", "m1"))[0]?.state, "leased");
    });

    it("claims due retries earliest first, whatever order they were scheduled in", async () => {
      const queue = await fresh();
      for (const m of ["m1", "m2", "m3"]) await queue.enqueue(single("acme", m));
      const leases = await queue.claim({ now: T0, limit: 3, leaseMs: LEASE });
      const due = { m1: 3000, m2: 1000, m3: 2000 } as Record<string, number>;
      for (const lease of leases) await queue.retry(lease, attempt(T0), T0 + due[lease.job.messageId]!);
      const claimed = await queue.claim({ now: T0 + 5000, limit: 3, leaseMs: LEASE });
      assert.deepEqual(claimed.map((lease) => lease.job.messageId), ["m2", "m3", "m1"]);
    });

    it("releases a job untried: no attempt is recorded", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      const lease = await claimOne(queue, T0);
      assert.equal(await queue.release(lease, T0 + 100), true);
      const again = await claimOne(queue, T0 + 100);
      assert.deepEqual(again.job.attempts, []);
    });

    it("makes the job of an expired lease due again, and voids the old lease", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      const stale = await claimOne(queue, T0);
      assert.deepEqual(await queue.claim({ now: T0 + LEASE - 1, limit: 5, leaseMs: LEASE }), []);
      assert.equal(await queue.nextDue(), T0 + LEASE);
      const fresh2 = await claimOne(queue, T0 + LEASE);
      assert.notEqual(fresh2.token, stale.token);
      assert.equal(await queue.ack(stale, attempt(T0, "success", 200)), false);
      assert.equal(await queue.retry(stale, attempt(T0), T0), false);
      assert.equal(await queue.release(stale, T0), false);
      assert.equal(await queue.bury(stale, { reason: "x", at: T0 }), false);
      assert.equal((await queue.message("acme", "m1"))[0]?.state, "leased");
      assert.equal(await queue.ack(fresh2, attempt(T0 + LEASE, "success", 200)), true);
      assert.equal((await queue.message("acme", "m1"))[0]?.state, "delivered");
    });

    it("renews held leases: a renewed job is not due at its old expiry but at the new one, and its lease still moves it", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      await queue.enqueue(single("acme", "m2", ["ep2"]));
      const leases = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      assert.equal(leases.length, 2);
      const renewed = await queue.renew(leases, T0 + 2 * LEASE);
      assert.deepEqual(renewed.map((lease) => [lease.job.id, lease.token, lease.expiresAt]), leases.map((lease) => [lease.job.id, lease.token, T0 + 2 * LEASE]));
      assert.deepEqual(await queue.claim({ now: T0 + LEASE, limit: 5, leaseMs: LEASE }), [], "not due at the old expiry");
      assert.equal(await queue.ack(renewed[0]!, attempt(T0 + LEASE, "success", 200)), true, "the renewed lease moves the job");
      assert.equal(await queue.ack(leases[1]!, attempt(T0 + LEASE, "success", 200)), true, "and so does the lease as claimed");
      assert.deepEqual(await queue.renew([], T0), []);
    });

    it("renews only leases still held: not one that expired and was claimed again, nor a finished one", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1"));
      await queue.enqueue(single("acme", "m2", ["ep2"]));
      const [first, second] = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      assert.equal(await queue.ack(second!, attempt(T0, "success", 200)), true);
      const again = await claimOne(queue, T0 + LEASE);
      assert.equal(again.job.id, first!.job.id);
      assert.deepEqual(await queue.renew([first!, second!], T0 + 5 * LEASE), [], "neither is held any more");
      assert.deepEqual((await queue.renew([again], T0 + 3 * LEASE)).map((lease) => lease.token), [again.token]);
      assert.deepEqual(await queue.claim({ now: T0 + 2 * LEASE, limit: 5, leaseMs: LEASE }), [], "the renewed lease holds past its first expiry");
      assert.equal((await claimOne(queue, T0 + 3 * LEASE)).job.id, first!.job.id, "due again once the renewed lease expires");
    });

    it("buries exhausted jobs per tenant, newest first, and filters by endpoint", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      await queue.enqueue(single("globex", "g1"));
      const leases = await queue.claim({ now: T0, limit: 5, leaseMs: LEASE });
      let at = T0;
      for (const lease of leases) assert.equal(await queue.bury(lease, { attempt: attempt(at), reason: "attempts ran out", at: ++at }), true);
      const dead = await queue.deadLetters("acme", { limit: 10 });
      assert.deepEqual(dead.map((job) => job.endpointId), ["ep2", "ep1"]);
      assert.equal(dead[0]?.state, "dead");
      assert.equal(dead[0]?.reason, "attempts ran out");
      assert.equal(dead[0]?.attempts.length, 1);
      assert.deepEqual((await queue.deadLetters("acme", { limit: 1 })).map((job) => job.endpointId), ["ep2"]);
      assert.deepEqual((await queue.deadLetters("acme", { limit: 10, endpointId: "ep1" })).map((job) => job.id), ["m1.ep1"]);
      assert.deepEqual((await queue.deadLetters("globex", { limit: 10 })).map((job) => job.id), ["g1.ep1"]);
      assert.deepEqual(await queue.deadLetters("initech", { limit: 10 }), []);
      assert.deepEqual(await queue.depth(T0), { ready: 0, delayed: 0, leased: 0, dead: 3 });
    });

    it("replays one dead job, or all of a tenant's, keeping their attempts", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2", "ep3"]));
      await queue.enqueue(single("globex", "g1"));
      for (const lease of await queue.claim({ now: T0, limit: 5, leaseMs: LEASE })) {
        await queue.bury(lease, { attempt: attempt(T0), reason: "attempts ran out", at: T0 });
      }
      assert.equal(await queue.replay("acme", { jobId: "g1.ep1" }, T0 + 1), 0, "another tenant's job is not found");
      assert.equal(await queue.replay("acme", { jobId: "m1.ep2" }, T0 + 1), 1);
      assert.equal(await queue.replay("acme", { jobId: "m1.ep2" }, T0 + 1), 0, "a replayed job is no longer dead");
      const [one] = await queue.claim({ now: T0 + 1, limit: 5, leaseMs: LEASE });
      assert.equal(one?.job.id, "m1.ep2");
      assert.equal(one?.job.attempts.length, 1);
      assert.equal(await queue.replay("acme", { endpointId: "ep3" }, T0 + 2), 1);
      assert.equal(await queue.replay("acme", {}, T0 + 2), 1);
      const rest = await queue.claim({ now: T0 + 2, limit: 5, leaseMs: LEASE });
      assert.deepEqual(rest.map((lease) => lease.job.id).sort(), ["m1.ep1", "m1.ep3"]);
      assert.deepEqual((await queue.deadLetters("globex", { limit: 5 })).map((job) => job.id), ["g1.ep1"]);
    });

    it("gives the first answer again for a used idempotency key, per tenant, until it expires", async () => {
      const queue = await fresh();
      const answer = { bodyHash: "h1", messageId: "m1", response: '{"id":"m1"}' };
      const keyed = (tenant: string, message: string) => ({
        ...single(tenant, message),
        idempotency: { key: "k1", answer: { ...answer, messageId: message }, expiresAt: T0 + 1000 },
      });
      assert.deepEqual(await queue.enqueue(keyed("acme", "m1")), { accepted: true });
      assert.deepEqual(await queue.enqueue(keyed("acme", "m2")), { accepted: false, previous: answer });
      assert.deepEqual(await queue.message("acme", "m2"), [], "the duplicate queued nothing");
      assert.deepEqual(await queue.enqueue(keyed("globex", "g1")), { accepted: true }, "keys are per tenant");
      await queue.sweep(T0 + 1000);
      assert.deepEqual(await queue.enqueue(keyed("acme", "m3")), { accepted: true });
    });

    it("refuses a batch that does not fit whole, queueing none of it", async () => {
      const queue = await fresh({ capacity: 3 });
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      await assert.rejects(queue.enqueue(single("acme", "m2", ["ep1", "ep2"])), { code: "ERR_RELAY_QUEUE_FULL" });
      assert.deepEqual(await queue.message("acme", "m2"), []);
      assert.deepEqual(await queue.depth(T0), { ready: 2, delayed: 0, leased: 0, dead: 0 });
      assert.deepEqual(await queue.enqueue(single("acme", "m3")), { accepted: true });
    });

    it("answers each of many batches queued at once on its own, as if they came one by one", async () => {
      const queue = await fresh({ capacity: 5 });
      const answer = { bodyHash: "h", messageId: "m1", response: '{"id":"m1"}' };
      const keyed = (message: string) => ({ ...single("acme", message), idempotency: { key: "k", answer: { ...answer, messageId: message }, expiresAt: T0 + 1000 } });
      const results = await Promise.allSettled([
        queue.enqueue(keyed("m1")),
        queue.enqueue(keyed("m2")),
        queue.enqueue(single("acme", "m3", ["ep1", "ep2"])),
        queue.enqueue(single("globex", "m3")),
        queue.enqueue(single("acme", "m4", ["ep1", "ep2", "ep3"])),
        queue.enqueue(single("acme", "m5", ["ep1", "ep2"])),
      ]);
      const outcomes = results.map((result) => result.status === "fulfilled" ? result.value : (result.reason as { code?: string; name: string }).code ?? (result.reason as Error).name);
      assert.deepEqual(outcomes, [
        { accepted: true },
        { accepted: false, previous: answer },
        { accepted: true },
        "TypeError",
        "ERR_RELAY_QUEUE_FULL",
        { accepted: true },
      ]);
      assert.deepEqual(await queue.depth(T0), { ready: 5, delayed: 0, leased: 0, dead: 0 });
      const claimed = await queue.claim({ now: T0, limit: 10, leaseMs: LEASE });
      assert.deepEqual(claimed.map((lease) => lease.job.id).sort(), ["m1.ep1", "m3.ep1", "m3.ep2", "m5.ep1", "m5.ep2"]);
    });

    it("frees capacity when jobs are delivered or die", async () => {
      const queue = await fresh({ capacity: 2 });
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      const [a, b] = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      await queue.ack(a!, attempt(T0, "success", 200));
      await queue.bury(b!, { reason: "endpoint deleted", at: T0 });
      assert.deepEqual(await queue.enqueue(single("acme", "m2", ["ep1", "ep2"])), { accepted: true });
    });

    it("tells when the earliest job that is not ready yet is due: a retry or a lease", async () => {
      const queue = await fresh();
      assert.equal(await queue.nextDue(), undefined);
      await queue.enqueue(single("acme", "m1"));
      await queue.enqueue(single("acme", "m2"));
      assert.equal(await queue.nextDue(), undefined, "ready jobs are for claim");
      const [a, b] = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      assert.equal(await queue.nextDue(), T0 + LEASE);
      await queue.retry(a!, attempt(T0), T0 + 7);
      assert.equal(await queue.nextDue(), T0 + 7);
      await queue.ack(b!, attempt(T0, "success", 200));
      assert.equal(await queue.nextDue(), T0 + 7);
    });

    it("gives endpoints turns: one endpoint's backlog does not hold back another's jobs", async () => {
      const queue = await fresh();
      for (let m = 0; m < 6; m++) await queue.enqueue(single("acme", `a${m}`, ["busy"]));
      await queue.enqueue(single("acme", "b0", ["quiet"]));
      await queue.enqueue(single("globex", "c0", ["busy"]));
      const claimed = await queue.claim({ now: T0, limit: 3, leaseMs: LEASE });
      assert.deepEqual(claimed.map((lease) => lease.job.id).sort(), ["a0.busy", "b0.quiet", "c0.busy"]);
      const rest = await queue.claim({ now: T0, limit: 10, leaseMs: LEASE });
      assert.deepEqual(rest.map((lease) => lease.job.messageId), ["a1", "a2", "a3", "a4", "a5"], "each endpoint's jobs in order");
    });

    it("takes at most perEndpoint jobs of an endpoint, fewer where endpointLimits says so, and leaves the rest ready", async () => {
      const queue = await fresh();
      for (let m = 0; m < 5; m++) await queue.enqueue(single("acme", `m${m}`, ["ep1", "ep2", "ep3"]));
      const limits = new Map([[endpointKey("acme", "ep2"), 1], [endpointKey("acme", "ep3"), 0]]);
      const claimed = await queue.claim({ now: T0, limit: 10, leaseMs: LEASE, perEndpoint: 2, endpointLimits: limits });
      const count = (endpoint: string): number => claimed.filter((lease) => lease.job.endpointId === endpoint).length;
      assert.deepEqual([count("ep1"), count("ep2"), count("ep3")], [2, 1, 0]);
      assert.deepEqual(await queue.depth(T0), { ready: 12, delayed: 0, leased: 3, dead: 0 });
      const next = await queue.claim({ now: T0, limit: 20, leaseMs: LEASE });
      assert.equal(next.length, 12);
      assert.deepEqual(next.filter((lease) => lease.job.endpointId === "ep3").map((lease) => lease.job.messageId), ["m0", "m1", "m2", "m3", "m4"]);
    });

    it("forgets delivered jobs and dead letters after their retention", async () => {
      const queue = await fresh({ deliveredRetentionMs: 1000, deadRetentionMs: 2000 });
      await queue.enqueue(single("acme", "m1"));
      await queue.enqueue(single("acme", "m2"));
      const [a, b] = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      await queue.ack(a!, { ...attempt(T0, "success", 200), latencyMs: 0 });
      await queue.bury(b!, { reason: "attempts ran out", at: T0 });
      await queue.sweep(T0 + 999);
      assert.equal((await queue.message("acme", "m1")).length, 1);
      await queue.sweep(T0 + 1000);
      assert.deepEqual(await queue.message("acme", "m1"), []);
      assert.equal((await queue.deadLetters("acme", { limit: 5 })).length, 1);
      await queue.sweep(T0 + 2000);
      assert.deepEqual(await queue.deadLetters("acme", { limit: 5 }), []);
      assert.deepEqual(await queue.depth(T0 + 2000), { ready: 0, delayed: 0, leased: 0, dead: 0 });
    });

    it("loses no job over a seeded random run of claims, failures, expiries and deaths", async () => {
      const seed = 20261122;
      const prng = createPrng(seed);
      const random = (): number => prng.next();
      const queue = await fresh({ capacity: 10_000 });
      const total = 300;
      for (let m = 0; m < total; m++) await queue.enqueue(single(m % 3 === 0 ? "globex" : "acme", `m${m}`));
      let now = T0;
      const delivered = new Map<string, number>();
      const dead = new Set<string>();
      for (let step = 0; step < 5000 && delivered.size + dead.size < total; step++) {
        now += Math.floor(random() * 2000);
        for (const lease of await queue.claim({ now, limit: 1 + Math.floor(random() * 20), leaseMs: LEASE })) {
          const roll = random();
          if (roll < 0.1) continue; // the worker "dies": the lease expires
          if (roll < 0.5) {
            if (await queue.ack(lease, attempt(now, "success", 200))) {
              delivered.set(lease.job.id, (delivered.get(lease.job.id) ?? 0) + 1);
            }
          } else if (lease.job.attempts.length >= 3) {
            if (await queue.bury(lease, { attempt: attempt(now), reason: "attempts ran out", at: now })) dead.add(lease.job.id);
          } else {
            await queue.retry(lease, attempt(now), now + Math.floor(random() * 10_000));
          }
        }
      }
      assert.equal(delivered.size + dead.size, total, `seed ${seed}: every job delivered or dead`);
      for (const [id, times] of delivered) assert.equal(times, 1, `seed ${seed}: ${id} acknowledged once`);
      for (const id of dead) assert.ok(!delivered.has(id), `seed ${seed}: ${id} both delivered and dead`);
      assert.deepEqual(await queue.depth(now), { ready: 0, delayed: 0, leased: 0, dead: dead.size });
    });
  });
}
