// What the Redis queue's message log does beyond the contract: a read looks
// at a bounded number of messages, so a query that matches few of many
// answers short pages with a cursor rather than scanning the whole log in
// one script (which would hold Redis for every other process meanwhile).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { MessageCursor } from "../../lib/relay/mod.ts";
import { connectRedis, RedisQueue, type RedisScripts } from "../../lib/relay/redis/mod.ts";
import { makeJob } from "../_contracts/job_queue.ts";
import { redisSkip, startRedis, type TestRedis } from "../_helpers/redis.ts";

const T0 = Date.UTC(2026, 10, 1);

describe("RedisQueue message log", { skip: redisSkip }, () => {
  let redis: TestRedis;
  let connection: RedisScripts;
  before(async () => {
    redis = await startRedis();
    connection = await connectRedis(redis.url);
  });
  after(async () => {
    await connection?.close();
    await redis?.stop();
  });

  it("looks at no more than maxLogScan messages a page, going on from where it stopped", async () => {
    const queue = new RedisQueue(connection, { prefix: `{log-${process.pid}}`, maxLogScan: 3 });
    for (let m = 1; m <= 10; m++) {
      const job = {
        ...makeJob(`m${m}`, "ep1", "acme", T0 + m),
        event: m === 2 || m === 9 ? "order.paid" : "user.created",
      };
      await queue.enqueue({ tenantId: "acme", messageId: `m${m}`, jobs: [job] });
    }
    const pages: string[][] = [];
    let after: MessageCursor | undefined;
    do {
      const page = await queue.messages("acme", {
        limit: 5,
        event: "order.paid",
        ...(after === undefined ? {} : { after }),
      });
      pages.push(page.messages.map((jobs) => jobs[0]!.messageId));
      after = page.next;
    } while (after !== undefined);
    // m10 m9 m8 | m7 m6 m5 | m4 m3 m2 | m1: three messages looked at a page.
    assert.deepEqual(pages, [["m9"], [], ["m2"], []]);
    const unfiltered = await queue.messages("acme", { limit: 2 });
    assert.deepEqual(unfiltered.messages.map((jobs) => jobs[0]!.messageId), ["m10", "m9"]);
    assert.deepEqual(unfiltered.next, { createdAt: T0 + 9, messageId: "m9" });
  });
});
