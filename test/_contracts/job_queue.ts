// The contract every JobQueue implementation passes: memory now, Redis and
// Kafka next. Each implementation's test file calls jobQueueContract with a
// factory; every test builds its own queue, so none depends on another.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ATTEMPT_STATS_BUCKET_MS,
  ATTEMPT_STATS_RETENTION_MS,
  endpointKey,
} from "../../lib/relay/queue.ts";
import {
  type Attempt,
  type Job,
  type JobQueue,
  type Lease,
  type MessageCursor,
  type MessageQuery,
} from "../../lib/relay/mod.ts";
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

function attempt(
  at: number,
  outcome: Attempt["outcome"] = "failure",
  status: number | null = 500,
): Attempt {
  return {
    at,
    outcome,
    status,
    latencyMs: 5,
    error: outcome === "success" ? null : `HTTP ${status}`,
  };
}

function single(tenant: string, message: string, endpoints: readonly string[] = ["ep1"], at = T0) {
  return {
    tenantId: tenant,
    messageId: message,
    jobs: endpoints.map((endpoint) => makeJob(message, endpoint, tenant, at)),
  };
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
export function jobQueueContract(
  name: string,
  make: (setup: QueueSetup) => Promise<JobQueue> | JobQueue,
): void {
  function fresh(setup: Partial<QueueSetup> = {}): Promise<JobQueue> {
    return Promise.resolve(
      make({ capacity: 1000, deliveredRetentionMs: 60_000, deadRetentionMs: 120_000, ...setup }),
    );
  }

  describe(`JobQueue contract: ${name}`, () => {
    it("claims queued jobs in the order they came, at most the limit, each once", async () => {
      const queue = await fresh();
      for (const m of ["m1", "m2", "m3"]) {
        assert.deepEqual(await queue.enqueue(single("acme", m)), { accepted: true });
      }
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
      assert.deepEqual(jobs.map((job) => [job.endpointId, job.state]).sort(), [["ep1", "ready"], [
        "ep2",
        "ready",
      ]]);
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
      assert.equal(
        await queue.ack(lease, attempt(T0, "success", 200)),
        false,
        "a second ack does nothing",
      );
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
      for (const lease of leases) {
        await queue.retry(lease, attempt(T0), T0 + due[lease.job.messageId]!);
      }
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
      assert.deepEqual(
        renewed.map((lease) => [lease.job.id, lease.token, lease.expiresAt]),
        leases.map((lease) => [lease.job.id, lease.token, T0 + 2 * LEASE]),
      );
      assert.deepEqual(
        await queue.claim({ now: T0 + LEASE, limit: 5, leaseMs: LEASE }),
        [],
        "not due at the old expiry",
      );
      assert.equal(
        await queue.ack(renewed[0]!, attempt(T0 + LEASE, "success", 200)),
        true,
        "the renewed lease moves the job",
      );
      assert.equal(
        await queue.ack(leases[1]!, attempt(T0 + LEASE, "success", 200)),
        true,
        "and so does the lease as claimed",
      );
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
      assert.deepEqual(
        await queue.renew([first!, second!], T0 + 5 * LEASE),
        [],
        "neither is held any more",
      );
      assert.deepEqual((await queue.renew([again], T0 + 3 * LEASE)).map((lease) => lease.token), [
        again.token,
      ]);
      assert.deepEqual(
        await queue.claim({ now: T0 + 2 * LEASE, limit: 5, leaseMs: LEASE }),
        [],
        "the renewed lease holds past its first expiry",
      );
      assert.equal(
        (await claimOne(queue, T0 + 3 * LEASE)).job.id,
        first!.job.id,
        "due again once the renewed lease expires",
      );
    });

    it("buries exhausted jobs per tenant, newest first, and filters by endpoint", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      await queue.enqueue(single("globex", "g1"));
      const leases = await queue.claim({ now: T0, limit: 5, leaseMs: LEASE });
      let at = T0;
      for (const lease of leases) {
        assert.equal(
          await queue.bury(lease, { attempt: attempt(at), reason: "attempts ran out", at: ++at }),
          true,
        );
      }
      const dead = await queue.deadLetters("acme", { limit: 10 });
      assert.deepEqual(dead.map((job) => job.endpointId), ["ep2", "ep1"]);
      assert.equal(dead[0]?.state, "dead");
      assert.equal(dead[0]?.reason, "attempts ran out");
      assert.equal(dead[0]?.attempts.length, 1);
      assert.deepEqual(
        (await queue.deadLetters("acme", { limit: 1 })).map((job) => job.endpointId),
        ["ep2"],
      );
      assert.deepEqual(
        (await queue.deadLetters("acme", { limit: 10, endpointId: "ep1" })).map((job) => job.id),
        ["m1.ep1"],
      );
      assert.deepEqual((await queue.deadLetters("globex", { limit: 10 })).map((job) => job.id), [
        "g1.ep1",
      ]);
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
      assert.equal(
        await queue.replay("acme", { jobId: "g1.ep1" }, T0 + 1),
        0,
        "another tenant's job is not found",
      );
      assert.equal(await queue.replay("acme", { jobId: "m1.ep2" }, T0 + 1), 1);
      assert.equal(
        await queue.replay("acme", { jobId: "m1.ep2" }, T0 + 1),
        0,
        "a replayed job is no longer dead",
      );
      const [one] = await queue.claim({ now: T0 + 1, limit: 5, leaseMs: LEASE });
      assert.equal(one?.job.id, "m1.ep2");
      assert.equal(one?.job.attempts.length, 1);
      assert.equal(await queue.replay("acme", { endpointId: "ep3" }, T0 + 2), 1);
      assert.equal(await queue.replay("acme", {}, T0 + 2), 1);
      const rest = await queue.claim({ now: T0 + 2, limit: 5, leaseMs: LEASE });
      assert.deepEqual(rest.map((lease) => lease.job.id).sort(), ["m1.ep1", "m1.ep3"]);
      assert.deepEqual((await queue.deadLetters("globex", { limit: 5 })).map((job) => job.id), [
        "g1.ep1",
      ]);
    });

    it("gives the first answer again for a used idempotency key, per tenant, until it expires", async () => {
      const queue = await fresh();
      const answer = { bodyHash: "h1", messageId: "m1", response: '{"id":"m1"}' };
      const keyed = (tenant: string, message: string) => ({
        ...single(tenant, message),
        idempotency: { key: "k1", answer: { ...answer, messageId: message }, expiresAt: T0 + 1000 },
      });
      assert.deepEqual(await queue.enqueue(keyed("acme", "m1")), { accepted: true });
      assert.deepEqual(await queue.enqueue(keyed("acme", "m2")), {
        accepted: false,
        previous: answer,
      });
      assert.deepEqual(await queue.message("acme", "m2"), [], "the duplicate queued nothing");
      assert.deepEqual(
        await queue.enqueue(keyed("globex", "g1")),
        { accepted: true },
        "keys are per tenant",
      );
      await queue.sweep(T0 + 1000);
      assert.deepEqual(await queue.enqueue(keyed("acme", "m3")), { accepted: true });
    });

    it("refuses a batch that does not fit whole, queueing none of it", async () => {
      const queue = await fresh({ capacity: 3 });
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      await assert.rejects(queue.enqueue(single("acme", "m2", ["ep1", "ep2"])), {
        code: "ERR_RELAY_QUEUE_FULL",
      });
      assert.deepEqual(await queue.message("acme", "m2"), []);
      assert.deepEqual(await queue.depth(T0), { ready: 2, delayed: 0, leased: 0, dead: 0 });
      assert.deepEqual(await queue.enqueue(single("acme", "m3")), { accepted: true });
    });

    it("answers each of many batches queued at once on its own, as if they came one by one", async () => {
      const queue = await fresh({ capacity: 5 });
      const answer = { bodyHash: "h", messageId: "m1", response: '{"id":"m1"}' };
      const keyed = (message: string) => ({
        ...single("acme", message),
        idempotency: { key: "k", answer: { ...answer, messageId: message }, expiresAt: T0 + 1000 },
      });
      const results = await Promise.allSettled([
        queue.enqueue(keyed("m1")),
        queue.enqueue(keyed("m2")),
        queue.enqueue(single("acme", "m3", ["ep1", "ep2"])),
        queue.enqueue(single("globex", "m3")),
        queue.enqueue(single("acme", "m4", ["ep1", "ep2", "ep3"])),
        queue.enqueue(single("acme", "m5", ["ep1", "ep2"])),
      ]);
      const outcomes = results.map((result) =>
        result.status === "fulfilled"
          ? result.value
          : (result.reason as { code?: string; name: string }).code ?? (result.reason as Error).name
      );
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
      assert.deepEqual(claimed.map((lease) => lease.job.id).sort(), [
        "m1.ep1",
        "m3.ep1",
        "m3.ep2",
        "m5.ep1",
        "m5.ep2",
      ]);
    });

    it("frees capacity when jobs are delivered or die", async () => {
      const queue = await fresh({ capacity: 2 });
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      const [a, b] = await queue.claim({ now: T0, limit: 2, leaseMs: LEASE });
      await queue.ack(a!, attempt(T0, "success", 200));
      await queue.bury(b!, { reason: "endpoint deleted", at: T0 });
      assert.deepEqual(await queue.enqueue(single("acme", "m2", ["ep1", "ep2"])), {
        accepted: true,
      });
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
      assert.deepEqual(claimed.map((lease) => lease.job.id).sort(), [
        "a0.busy",
        "b0.quiet",
        "c0.busy",
      ]);
      const rest = await queue.claim({ now: T0, limit: 10, leaseMs: LEASE });
      assert.deepEqual(
        rest.map((lease) => lease.job.messageId),
        ["a1", "a2", "a3", "a4", "a5"],
        "each endpoint's jobs in order",
      );
    });

    it("takes at most perEndpoint jobs of an endpoint, fewer where endpointLimits says so, and leaves the rest ready", async () => {
      const queue = await fresh();
      for (let m = 0; m < 5; m++) {
        await queue.enqueue(single("acme", `m${m}`, ["ep1", "ep2", "ep3"]));
      }
      const limits = new Map([[endpointKey("acme", "ep2"), 1], [endpointKey("acme", "ep3"), 0]]);
      const claimed = await queue.claim({
        now: T0,
        limit: 10,
        leaseMs: LEASE,
        perEndpoint: 2,
        endpointLimits: limits,
      });
      const count = (endpoint: string): number =>
        claimed.filter((lease) => lease.job.endpointId === endpoint).length;
      assert.deepEqual([count("ep1"), count("ep2"), count("ep3")], [2, 1, 0]);
      assert.deepEqual(await queue.depth(T0), { ready: 12, delayed: 0, leased: 3, dead: 0 });
      const next = await queue.claim({ now: T0, limit: 20, leaseMs: LEASE });
      assert.equal(next.length, 12);
      assert.deepEqual(
        next.filter((lease) => lease.job.endpointId === "ep3").map((lease) => lease.job.messageId),
        ["m0", "m1", "m2", "m3", "m4"],
      );
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

    /** Messages m1..m<n> of acme, one a millisecond from T0 + 1, to ep1 (and to ep2 where `both` says). */
    async function logged(
      queue: JobQueue,
      n: number,
      event = (_m: number): string => "user.created",
      both = (_m: number): boolean => false,
    ): Promise<void> {
      for (let m = 1; m <= n; m++) {
        const endpoints = both(m) ? ["ep1", "ep2"] : ["ep1"];
        const jobs = endpoints.map((endpoint) => ({
          ...makeJob(`m${m}`, endpoint, "acme", T0 + m),
          event: event(m),
        }));
        await queue.enqueue({ tenantId: "acme", messageId: `m${m}`, jobs });
      }
    }

    /** The message ids of a query's pages, followed from cursor to cursor, page by page. */
    async function pages(queue: JobQueue, query: MessageQuery): Promise<string[][]> {
      const all: string[][] = [];
      let after: MessageCursor | undefined;
      do {
        const page = await queue.messages(
          "acme",
          after === undefined ? query : { ...query, after },
        );
        all.push(page.messages.map((jobs) => jobs[0]!.messageId));
        after = page.next;
      } while (after !== undefined && all.length < 20);
      return all;
    }

    it("lists a tenant's messages newest first, each with its jobs, a page at a time by cursor", async () => {
      const queue = await fresh();
      await logged(queue, 5, undefined, (m) => m === 3);
      await queue.enqueue(single("globex", "g1", ["ep1"], T0 + 9));
      assert.deepEqual(await pages(queue, { limit: 2 }), [["m5", "m4"], ["m3", "m2"], ["m1"]]);
      const [page] = [await queue.messages("acme", { limit: 3 })];
      assert.deepEqual(
        page.messages[2]!.map((job) => [job.id, job.state, job.event, job.createdAt]).sort(),
        [
          ["m3.ep1", "ready", "user.created", T0 + 3],
          ["m3.ep2", "ready", "user.created", T0 + 3],
        ],
      );
      assert.deepEqual(page.next, { createdAt: T0 + 3, messageId: "m3" });
      assert.deepEqual(
        await pages(queue, { limit: 5 }),
        [["m5", "m4", "m3", "m2", "m1"]],
        "no next page when the last one is full",
      );
      const globex = await queue.messages("globex", { limit: 10 });
      assert.deepEqual(globex.messages.map((jobs) => jobs.map((job) => job.id)), [["g1.ep1"]]);
      assert.equal(globex.next, undefined);
      assert.deepEqual(await queue.messages("initech", { limit: 10 }), { messages: [] });
    });

    it("orders messages made in the same millisecond by id, and pages across them", async () => {
      const queue = await fresh();
      for (const m of ["m3", "m1", "m5", "m2", "m4"]) {
        await queue.enqueue(single("acme", m, ["ep1"], T0));
      }
      assert.deepEqual(await pages(queue, { limit: 2 }), [["m5", "m4"], ["m3", "m2"], ["m1"]]);
    });

    it("filters the log by event, delivery status, endpoint and creation time", async () => {
      const queue = await fresh();
      await logged(queue, 6, (m) => (m % 2 === 0 ? "order.paid" : "user.created"), (m) => m === 5);
      const leases = await queue.claim({ now: T0 + 10, limit: 10, leaseMs: LEASE });
      const by = (id: string): Lease => leases.find((lease) => lease.job.id === id)!;
      await queue.ack(by("m1.ep1"), attempt(T0 + 10, "success", 200));
      await queue.bury(by("m2.ep1"), {
        attempt: attempt(T0 + 10),
        reason: "attempts ran out",
        at: T0 + 11,
      });
      await queue.retry(by("m3.ep1"), attempt(T0 + 10), T0 + 5000);
      await queue.ack(by("m5.ep1"), attempt(T0 + 10, "success", 200));
      await queue.bury(by("m5.ep2"), {
        attempt: attempt(T0 + 10),
        reason: "attempts ran out",
        at: T0 + 11,
      });
      // m4 and m6 are leased: pending.
      const ids = async (query: Omit<MessageQuery, "limit">): Promise<string[]> =>
        (await pages(queue, { limit: 2, ...query })).flat();
      assert.deepEqual(await ids({ status: "delivered" }), ["m5", "m1"]);
      assert.deepEqual(await ids({ status: "dead" }), ["m5", "m2"]);
      assert.deepEqual(await ids({ status: "pending" }), ["m6", "m4", "m3"]);
      assert.deepEqual(await ids({ event: "order.paid" }), ["m6", "m4", "m2"]);
      assert.deepEqual(await ids({ event: "order.paid", status: "dead" }), ["m2"]);
      assert.deepEqual(await ids({ event: "no.such" }), []);
      assert.deepEqual(await ids({ endpointId: "ep2" }), ["m5"]);
      assert.deepEqual(
        await ids({ endpointId: "ep1", status: "dead" }),
        ["m2"],
        "m5 died only at ep2",
      );
      const [m5] = (await queue.messages("acme", { limit: 1, endpointId: "ep2" })).messages;
      assert.deepEqual(m5!.map((job) => [job.id, job.state, job.reason, job.attempts.length]), [[
        "m5.ep2",
        "dead",
        "attempts ran out",
        1,
      ]]);
      assert.deepEqual(await ids({ since: T0 + 2, until: T0 + 5 }), ["m4", "m3", "m2"]);
      assert.deepEqual(await ids({ since: T0 + 6 }), ["m6"]);
      assert.deepEqual(await ids({ until: T0 + 2 }), ["m1"]);
      assert.deepEqual(
        (await queue.messages("acme", {
          limit: 5,
          until: T0 + 5,
          after: { createdAt: T0 + 6, messageId: "m6" },
        })).messages.map((jobs) => jobs[0]!.messageId),
        ["m4", "m3", "m2", "m1"],
        "the earlier of cursor and until bounds the page",
      );
      const [m3] =
        (await queue.messages("acme", { limit: 1, status: "pending", until: T0 + 4 })).messages;
      assert.deepEqual(m3!.map((job) => [job.state, job.attempts.map((a) => a.status)]), [[
        "delayed",
        [500],
      ]]);
    });

    it("leaves messages past their retention out of the log", async () => {
      const queue = await fresh({ deliveredRetentionMs: 1000, deadRetentionMs: 2000 });
      await logged(queue, 3);
      const leases = await queue.claim({ now: T0 + 3, limit: 2, leaseMs: LEASE });
      await queue.ack(leases[0]!, { ...attempt(T0 + 3, "success", 200), latencyMs: 0 });
      await queue.bury(leases[1]!, { reason: "attempts ran out", at: T0 + 3 });
      await queue.sweep(T0 + 1003);
      assert.deepEqual(await pages(queue, { limit: 10 }), [["m3", "m2"]]);
      await queue.sweep(T0 + 2003);
      assert.deepEqual(await pages(queue, { limit: 10 }), [["m3"]]);
    });

    it("counts each endpoint's attempts and successes as acks, retries and burials record them, not releases", async () => {
      const queue = await fresh();
      await queue.enqueue(single("acme", "m1", ["ep1", "ep2"]));
      await queue.enqueue(single("acme", "m2", ["ep1"]));
      await queue.enqueue(single("globex", "g1", ["ep1"]));
      const at = T0 + 2 * ATTEMPT_STATS_BUCKET_MS;
      const leases = await queue.claim({ now: at, limit: 10, leaseMs: LEASE });
      const by = (id: string): Lease => leases.find((lease) => lease.job.id === id)!;
      await queue.retry(by("m1.ep1"), attempt(at), at + 10);
      await queue.ack(by("m1.ep2"), attempt(at, "success", 200));
      await queue.release(by("m2.ep1"), at + 10);
      await queue.ack(by("g1.ep1"), attempt(at, "success", 200));
      const later = at + ATTEMPT_STATS_BUCKET_MS;
      for (const lease of await queue.claim({ now: later, limit: 10, leaseMs: LEASE })) {
        if (lease.job.id === "m1.ep1") {
          await queue.bury(lease, {
            attempt: attempt(later),
            reason: "attempts ran out",
            at: later,
          });
        } else await queue.bury(lease, { reason: "the endpoint was deleted", at: later });
      }
      assert.deepEqual(await queue.attemptStats("acme", T0), [
        { endpointId: "ep1", attempts: 2, successes: 0 },
        { endpointId: "ep2", attempts: 1, successes: 1 },
      ]);
      assert.deepEqual(await queue.attemptStats("acme", later + ATTEMPT_STATS_BUCKET_MS - 1), [{
        endpointId: "ep1",
        attempts: 1,
        successes: 0,
      }], "since is rounded down to its bucket");
      assert.deepEqual(await queue.attemptStats("acme", later + ATTEMPT_STATS_BUCKET_MS), []);
      assert.deepEqual(await queue.attemptStats("globex", 0), [{
        endpointId: "ep1",
        attempts: 1,
        successes: 1,
      }]);
      assert.deepEqual(await queue.attemptStats("initech", 0), []);
      await queue.sweep(at + ATTEMPT_STATS_RETENTION_MS + ATTEMPT_STATS_BUCKET_MS - 1);
      assert.equal(
        (await queue.attemptStats("acme", 0)).length,
        2,
        "a bucket is kept while part of it is within the retention",
      );
      await queue.sweep(at + ATTEMPT_STATS_RETENTION_MS + ATTEMPT_STATS_BUCKET_MS);
      assert.deepEqual(await queue.attemptStats("acme", 0), [{
        endpointId: "ep1",
        attempts: 1,
        successes: 0,
      }], "the older bucket is swept");
      await queue.sweep(later + ATTEMPT_STATS_RETENTION_MS + ATTEMPT_STATS_BUCKET_MS);
      assert.deepEqual(await queue.attemptStats("acme", 0), []);
    });

    it("loses no job over a seeded random run of claims, failures, expiries and deaths", async () => {
      const seed = 20261122;
      const prng = createPrng(seed);
      const random = (): number => prng.next();
      const queue = await fresh({ capacity: 10_000 });
      const total = 300;
      for (let m = 0; m < total; m++) {
        await queue.enqueue(single(m % 3 === 0 ? "globex" : "acme", `m${m}`));
      }
      let now = T0;
      const delivered = new Map<string, number>();
      const dead = new Set<string>();
      for (let step = 0; step < 5000 && delivered.size + dead.size < total; step++) {
        now += Math.floor(random() * 2000);
        for (
          const lease of await queue.claim({
            now,
            limit: 1 + Math.floor(random() * 20),
            leaseMs: LEASE,
          })
        ) {
          const roll = random();
          if (roll < 0.1) continue; // the worker "dies": the lease expires
          if (roll < 0.5) {
            if (await queue.ack(lease, attempt(now, "success", 200))) {
              delivered.set(lease.job.id, (delivered.get(lease.job.id) ?? 0) + 1);
            }
          } else if (lease.job.attempts.length >= 3) {
            if (
              await queue.bury(lease, {
                attempt: attempt(now),
                reason: "attempts ran out",
                at: now,
              })
            ) dead.add(lease.job.id);
          } else {
            await queue.retry(lease, attempt(now), now + Math.floor(random() * 10_000));
          }
        }
      }
      assert.equal(delivered.size + dead.size, total, `seed ${seed}: every job delivered or dead`);
      for (const [id, times] of delivered) {
        assert.equal(times, 1, `seed ${seed}: ${id} acknowledged once`);
      }
      for (const id of dead) {
        assert.ok(!delivered.has(id), `seed ${seed}: ${id} both delivered and dead`);
      }
      assert.deepEqual(await queue.depth(now), {
        ready: 0,
        delayed: 0,
        leased: 0,
        dead: dead.size,
      });
    });
  });
}
