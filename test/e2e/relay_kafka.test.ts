// The relay on a Kafka cluster (librdkafka's mock, 3 brokers) with real relay
// processes: two sharing the partitions, a relay killed with SIGKILL
// mid-delivery and started again, and a broker taken down for 10 seconds.
// Each run accepts 10,000 messages and checks that every one reaches the
// receiver; duplicates (the same webhook-id twice) are counted and reported.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { kafkaTopics } from "../../lib/relay/mod.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";
import { allDelivered, counter, MESSAGES, post, Receiver, report, stop, tenantsFile } from "../_helpers/relay_e2e.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

const PARTITIONS = 4;

describe("the relay on one Kafka cluster, several processes", { skip: kafkaSkip, timeout: 300_000 }, () => {
  let kafka: TestKafka;
  const dirs: string[] = [];
  before(async () => {
    kafka = await startKafka();
  });
  after(async () => {
    await kafka.stop();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  /** Fresh topics and group, so that the tests share the cluster but not the queue. */
  let n = 0;
  async function setup(receiverUrl: string): Promise<Record<string, string>> {
    const prefix = `e2e-${++n}`;
    for (const topic of Object.values(kafkaTopics(prefix))) await kafka.topic(topic, PARTITIONS);
    await kafka.group(`${prefix}-relay`);
    const dir = mkdtempSync(join(tmpdir(), "tributary-relay-kafka-"));
    dirs.push(dir);
    return {
      SERVICES: "relay",
      STORAGE_TYPE: "kafka",
      KAFKA_BROKER: kafka.brokers.join(","),
      KAFKA_TOPIC_PREFIX: prefix,
      KAFKA_PARTITIONS: String(PARTITIONS),
      KAFKA_GROUP_ID: `${prefix}-relay`,
      TENANTS_FILE: tenantsFile(dir, receiverUrl),
      ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
      RETRY_SCHEDULE: "100ms",
      MAX_ATTEMPTS: "1000",
      DELIVERY_TIMEOUT_MS: "1000",
      ENDPOINT_CONCURRENCY: "16",
    };
  }

  it("shares 10,000 messages between two relay processes: each delivered, none lost", async (t) => {
    const receiver = new Receiver();
    const env = await setup(await receiver.listen());
    const first = startServer(env);
    const second = startServer(env);
    try {
      const urls = [await listeningUrl(first, "Webhook intake"), await listeningUrl(second, "Webhook intake")];
      const accepted = await post(() => urls, MESSAGES);
      assert.equal(accepted.size, MESSAGES);
      await allDelivered(receiver, accepted, [first, second]);
      report(t, receiver, accepted);
      const attempts = await Promise.all(urls.map((url) => counter(url, "tributary_relay_delivery_attempts_total")));
      t.diagnostic(`delivery attempts by process: ${attempts.join(", ")}`);
      for (const made of attempts) assert.ok(made > 0, `both processes delivered: ${attempts.join(", ")}`);
    } finally {
      receiver.close();
      await Promise.all([stop(first), stop(second)]);
    }
  });

  it("loses nothing when a relay is killed with SIGKILL mid-delivery and started again", async (t) => {
    const receiver = new Receiver();
    const env = await setup(await receiver.listen());
    const first = startServer(env);
    let second: Started | undefined;
    try {
      const url = await listeningUrl(first, "Webhook intake");
      // The receiver holds its answers, so deliveries are in flight when the relay dies.
      receiver.hold = true;
      const accepted = await post(() => [url], MESSAGES);
      assert.equal(accepted.size, MESSAGES);
      while (receiver.held.length < 16) await once(receiver.server, "request");
      first.child.kill("SIGKILL");
      await once(first.child, "exit");
      const unanswered = receiver.held.length;
      receiver.hold = false;
      for (const res of receiver.held.splice(0)) res.destroy();
      assert.ok(receiver.seen.size < MESSAGES, "most messages were still queued when the relay died");
      second = startServer(env);
      await listeningUrl(second, "Webhook intake");
      // The new process gets the partitions once the dead one's session expires, and reads them from the last commit.
      await allDelivered(receiver, accepted, [first, second]);
      t.diagnostic(`${unanswered} requests were unanswered at the kill`);
      report(t, receiver, accepted);
    } finally {
      receiver.close();
      if (second !== undefined) await stop(second);
    }
  });

  it("loses none of 10,000 accepted messages while a broker is down for 10 seconds", async (t) => {
    const receiver = new Receiver();
    const env = await setup(await receiver.listen());
    const relay = startServer(env);
    try {
      const url = await listeningUrl(relay, "Webhook intake");
      let outage: Promise<void> | undefined;
      let during = { accepted: 0, delivered: 0 };
      let sofar = 0;
      const accepted = await post(() => [url], MESSAGES, (count) => {
        sofar = count;
        // Once 3,000 are in, broker 2 goes away mid-intake and mid-delivery, and comes back 10 s later.
        if (count !== 3000) return;
        outage = (async () => {
          await kafka.down(2);
          const before = { accepted: sofar, delivered: receiver.seen.size };
          await delay(10_000);
          during = { accepted: sofar - before.accepted, delivered: receiver.seen.size - before.delivered };
          await kafka.up(2);
        })();
      });
      await outage;
      t.diagnostic(`with broker 2 down: ${during.accepted} accepted, ${during.delivered} delivered`);
      assert.ok(during.accepted > 0 && during.delivered > 0, "the two other brokers kept intake and delivery going");
      assert.equal(accepted.size, MESSAGES);
      await allDelivered(receiver, accepted, [relay]);
      report(t, receiver, accepted);
    } finally {
      receiver.close();
      await stop(relay);
    }
  });
});
