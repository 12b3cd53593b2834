// The relay on a Kafka cluster (librdkafka's mock, 3 brokers) with real relay
// processes: two sharing the partitions, a relay killed with SIGKILL
// mid-delivery and started again, and a broker taken down for 10 seconds.
// Each run accepts 10,000 messages and checks that every one reaches the
// receiver; duplicates (the same webhook-id twice) are counted and reported.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { kafkaConfigTopic } from "../../lib/relay/kafka/kafka_config_store.ts";
import { kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import { kafkaSkip, startKafka, type TestKafka } from "../_helpers/kafka.ts";
import {
  allDelivered,
  endpointsShared,
  killedMidDelivery,
  MESSAGES,
  post,
  Receiver,
  report,
  SigningReceiver,
  stop,
  tenantsFile,
  twoRelaysShare,
  within,
} from "../_helpers/relay_e2e.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";

const PARTITIONS = 4;

/** `work`, or a failure naming it when the mock cluster has not answered in 30 s. */
async function bounded(work: Promise<void>, what: string): Promise<void> {
  const done = await within(30_000, work.then(() => "done"));
  assert.equal(done, "done", `the mock cluster did not finish ${what} in 30 s`);
}

describe(
  "the relay on one Kafka cluster, several processes",
  { skip: kafkaSkip, timeout: 600_000 },
  () => {
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
      await kafka.topic(kafkaConfigTopic(prefix), 1);
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
        // A killed relay's partitions go to the next one after 10 s rather than 30.
        KAFKA_SESSION_TIMEOUT_MS: "10000",
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
      await twoRelaysShare(t, receiver, await setup(await receiver.listen()));
    });

    it("shares endpoints and secrets: made, patched and rotated on one process, used by the other within a second, kept over a restart of both", async (t) => {
      const receiver = new SigningReceiver();
      const origin = await receiver.listen();
      // Kafka processes take seconds to join their groups at each start: a longer overlap than on Redis.
      await endpointsShared(t, receiver, origin, await setup(`${origin}/hook`), 25);
    });

    it("loses nothing when a relay is killed with SIGKILL mid-delivery and started again", async (t) => {
      const receiver = new Receiver();
      await killedMidDelivery(
        t,
        receiver,
        await setup(await receiver.listen()),
        "the new process got the partitions once the dead one's session expired, and read them from the last commit",
      );
    });

    it("loses none of 10,000 accepted messages while a broker is down for 10 seconds", async (t) => {
      const receiver = new Receiver();
      const env = await setup(await receiver.listen());
      const relay = startServer(env);
      try {
        const url = await listeningUrl(relay);
        let outage: Promise<void> | undefined;
        let during = { accepted: 0, delivered: 0 };
        let sofar = 0;
        const accepted = await post(() => [url], MESSAGES, (count) => {
          sofar = count;
          // Once 3,000 are in, broker 2 goes away mid-intake and mid-delivery, and comes back 10 s later.
          if (count !== 3000) return;
          outage = (async () => {
            await bounded(kafka.down(2), "taking broker 2 down");
            const before = { accepted: sofar, delivered: receiver.seen.size };
            await delay(10_000);
            during = {
              accepted: sofar - before.accepted,
              delivered: receiver.seen.size - before.delivered,
            };
            await bounded(kafka.up(2), "bringing broker 2 back");
          })();
        });
        await outage;
        t.diagnostic(
          `with broker 2 down: ${during.accepted} accepted, ${during.delivered} delivered`,
        );
        assert.ok(
          during.accepted > 0 && during.delivered > 0,
          "the two other brokers kept intake and delivery going",
        );
        assert.equal(accepted.size, MESSAGES);
        await allDelivered(receiver, accepted, [relay]);
        report(t, receiver, accepted);
      } finally {
        receiver.close();
        await stop(relay);
      }
    });
  },
);
