// The relay on a real Redis with real relay processes: two processes sharing
// one queue, a relay killed with SIGKILL mid-delivery, and Redis itself killed
// and restarted from its append-only file. Each run accepts 10,000 messages
// and checks that every one reaches the receiver; duplicates (the same
// webhook-id twice, which at-least-once delivery allows) are counted and
// reported.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import {
  freePort,
  redisServerSkip,
  redisSkip,
  startRedis,
  type TestRedis,
} from "../_helpers/redis.ts";
import {
  allDelivered,
  endpointsShared,
  heldJobsRecovered,
  killedMidDelivery,
  MESSAGES,
  post,
  Receiver,
  report,
  SigningReceiver,
  stop,
  tenantsFile,
  twoRelaysShare,
} from "../_helpers/relay_e2e.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";

function relayEnv(redisUrl: string, tenants: string): Record<string, string> {
  return {
    SERVICES: "relay",
    STORAGE_TYPE: "redis",
    REDIS_URL: redisUrl,
    TENANTS_FILE: tenants,
    ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
    RETRY_SCHEDULE: "100ms",
    MAX_ATTEMPTS: "1000",
    DELIVERY_TIMEOUT_MS: "1000",
    ENDPOINT_CONCURRENCY: "16",
  };
}

// The bound is for a hang, not a pace: on two cores beside two other test
// files, the four runs of 10,000 messages took 240 s in CI (125, 28, 75 and
// about 12 s), each delivery timing out at 1 s more often when the cores are
// busy (retried: more duplicates, more time), against about 120 s alone.
describe("the relay on one Redis, several processes", { skip: redisSkip, timeout: 480_000 }, () => {
  let redis: TestRedis;
  const dirs: string[] = [];
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  /** A fresh key prefix, so that the tests share the server but not the queue. */
  let n = 0;
  function setup(receiverUrl: string): Record<string, string> {
    const dir = mkdtempSync(join(tmpdir(), "tributary-relay-redis-"));
    dirs.push(dir);
    return {
      ...relayEnv(redis.url, tenantsFile(dir, receiverUrl)),
      REDIS_KEY_PREFIX: `{e2e-${process.pid}-${++n}}`,
    };
  }

  it("shares 10,000 messages between two relay processes: each delivered, none lost", async (t) => {
    const receiver = new Receiver();
    await twoRelaysShare(t, receiver, setup(await receiver.listen()));
  });

  it("shares endpoints and secrets: made, patched and rotated on one process, used by the other within a second, kept over a restart of both", async (t) => {
    const receiver = new SigningReceiver();
    const origin = await receiver.listen();
    await endpointsShared(t, receiver, origin, setup(`${origin}/hook`));
  });

  it("loses nothing when a relay is killed with SIGKILL mid-delivery and started again", async (t) => {
    const receiver = new Receiver();
    await killedMidDelivery(
      t,
      receiver,
      setup(await receiver.listen()),
      "the jobs the dead relay held came back when their leases expired",
    );
  });

  it("delivers every job a relay killed mid-delivery held from the relay beside it within 10 s of the kill (leases renewed by heartbeats, 5 s long)", async (t) => {
    const receiver = new Receiver();
    await heldJobsRecovered(t, receiver, setup(await receiver.listen()), 10_000);
  });
});

describe("the relay while Redis is killed and restarted from its append-only file", {
  skip: redisServerSkip,
  timeout: 240_000,
}, () => {
  it("loses none of 10,000 accepted messages", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-redis-aof-"));
    const port = await freePort();
    let redis = await startRedis(dir, port);
    const receiver = new Receiver();
    const relay = startServer(relayEnv(redis.url, tenantsFile(dir, await receiver.listen())));
    try {
      const url = await listeningUrl(relay);
      let killed: Promise<void> | undefined;
      const accepted = await post(() => [url], MESSAGES, (count) => {
        // Once 3,000 are in, Redis dies mid-intake and mid-delivery and comes back on its own file.
        if (count !== 3000) return;
        killed = (async () => {
          redis.child!.kill("SIGKILL");
          await once(redis.child!, "exit");
          redis = await startRedis(dir, port);
        })();
      });
      await killed;
      assert.equal(accepted.size, MESSAGES);
      await allDelivered(receiver, accepted, [relay]);
      report(t, receiver, accepted);
      assert.match(
        relay.errors(),
        /Relay queue: Redis at redis:\/\/127\.0\.0\.1:\d+: /,
        "the relay said it lost Redis",
      );
    } finally {
      receiver.close();
      await stop(relay);
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
