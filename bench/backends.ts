// The relay's queue backends against the memory backend, same run, same
// receiver, same load (1 KiB events, one endpoint, default concurrency):
//
// - intake: accepted webhooks per second on intake-only processes
//   (WORKER_CONCURRENCY=0), Redis / memory. Target: >= 0.5x.
// - end to end: messages delivered per second from POST /webhook to the
//   receiver, Redis / memory (target: >= 0.5x) and Kafka / memory (target:
//   >= 0.3x; librdkafka's mock cluster of 3 brokers, the tests' broker).
// - configuration: how long an endpoint changed through the API of one
//   relay process takes to be served by another on the same Redis or Kafka
//   (20 changes each; median and worst printed). Target: the worst under
//   the one second the relay promises (the figure is worst / 1 s).
//
// The relays run on the servers' CPU; redis-server (append-only, fsync every
// second: Redis's default), the Kafka mock cluster, the receiver and the load
// generator on the other.
// The relays take turns in short runs, round after round, and each figure is
// the median of the rounds' ratios (the machine's speed drifts).
// Needs: redis-server and the Kafka mock cluster (test/kafka_mock, built by .ci/run), about 3 minutes.
import { once } from "node:events";
import { report } from "./_data.ts";
import type { LoadOptions } from "./_load.ts";
import { kafkaConfigTopic } from "../lib/relay/kafka/kafka_config_store.ts";
import { kafkaTopics } from "../lib/relay/kafka/kafka_queue.ts";
import { startKafka } from "../test/_helpers/kafka.ts";
import {
  median,
  pinToClientCpu,
  runPinnedLoad,
  startPinnedRedis,
  startPinnedServer,
} from "./_processes.ts";
import { oneTenantRelay, RelayRounds } from "./_relay_rounds.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 2);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5);
const COUNT = Number(process.env["BENCH_DELIVER_COUNT"] ?? 10_000);
const KEY = "bench-backends-key";
const WEBHOOK = JSON.stringify({
  event: "order.created",
  data: { order: "o-1", note: "x".repeat(960) },
});

const receiver = await startPinnedServer(["--import", "tsx", "bench/_receiver.ts"], {}, "client");
const redis = await startPinnedRedis();
const kafka = await startKafka({
  ...Object.fromEntries(Object.values(kafkaTopics("bench")).map((topic) => [topic, 4])),
  [kafkaConfigTopic("bench")]: 1,
});
pinToClientCpu(kafka.pid);
const base = oneTenantRelay(KEY, `${receiver.url}/hook`);
const onRedis = (prefix: string) => ({
  STORAGE_TYPE: "redis",
  REDIS_URL: redis.url,
  REDIS_KEY_PREFIX: `{${prefix}}`,
});
const onKafka = {
  STORAGE_TYPE: "kafka",
  KAFKA_BROKER: kafka.brokers.join(","),
  KAFKA_TOPIC_PREFIX: "bench",
  KAFKA_PARTITIONS: "4",
};
const BACKENDS = ["memory", "redis"] as const;
const intake = {
  memory: await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...base,
    WORKER_CONCURRENCY: "0",
  }),
  redis: await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...base,
    ...onRedis("bench-intake"),
    WORKER_CONCURRENCY: "0",
  }),
};
const relays = {
  memory: await startPinnedServer(["--import", "tsx", "server.ts"], base),
  redis: await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...base,
    ...onRedis("bench-relay"),
  }),
  kafka: await startPinnedServer(["--import", "tsx", "server.ts"], { ...base, ...onKafka }),
};
const RELAYS = ["memory", "redis", "kafka"] as const;
const CHANGES = 20;

/**
 * Changes the endpoint's rate limit on `from` `CHANGES` times, each time
 * asking `to` back to back until it serves the change.
 * @returns the milliseconds each change took to be served by `to`
 */
async function propagation(from: string, to: string): Promise<number[]> {
  const headers = { authorization: `Bearer ${KEY}`, "content-type": "application/json" };
  const took: number[] = [];
  for (let change = 1; change <= CHANGES; change++) {
    const rate = 1000 + change;
    const patched = await fetch(`${from}/webhook/endpoints/e1`, {
      method: "PATCH",
      headers,
      body: JSON.stringify({ rate_limit_per_second: rate }),
    });
    if (patched.status !== 200) {
      throw new Error(`PATCH answered ${patched.status}: ${await patched.text()}`);
    }
    const started = performance.now();
    for (let tries = 0;; tries++) {
      const seen = (await (await fetch(`${to}/webhook/endpoints/e1`, { headers })).json()) as {
        rate_limit_per_second: number | null;
      };
      if (seen.rate_limit_per_second === rate) break;
      if (tries > 200_000 || performance.now() - started > 10_000) {
        throw new Error(`change ${change} not served by the other process within 10 s`);
      }
    }
    took.push(performance.now() - started);
  }
  // Back to no limit, for whatever runs next.
  await fetch(`${from}/webhook/endpoints/e1`, {
    method: "PATCH",
    headers,
    body: JSON.stringify({ rate_limit_per_second: null }),
  });
  return took;
}
const rounds = new RelayRounds(receiver.url, KEY, WEBHOOK);
const load = (url: string, seconds: number): LoadOptions => ({
  url: `${url}/webhook`,
  method: "POST",
  headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
  body: WEBHOOK,
  connections: 10,
  seconds,
});

try {
  for (const name of BACKENDS) await runPinnedLoad(load(intake[name].url, 1));
  for (const name of RELAYS) await rounds.round(relays[name].url, 2000);
  const rates = {
    intake: { memory: [] as number[], redis: [] as number[] },
    delivered: { memory: [] as number[], redis: [] as number[], kafka: [] as number[] },
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of BACKENDS) {
      const result = await runPinnedLoad(load(intake[name].url, SECONDS));
      if (result.non2xx > 0) {
        throw new Error(
          `${name} intake: ${result.non2xx} non-2xx responses, e.g. ${result.sample}`,
        );
      }
      rates.intake[name].push(result.perSecond);
    }
    for (const name of RELAYS) {
      rates.delivered[name].push(await rounds.round(relays[name].url, COUNT));
    }
    console.log(
      `round ${round + 1}: intake memory ${rates.intake.memory[round]!.toFixed(0)}/s, redis ${
        rates.intake.redis[round]!.toFixed(0)
      }/s; ` +
        `delivered memory ${rates.delivered.memory[round]!.toFixed(0)}/s, redis ${
          rates.delivered.redis[round]!.toFixed(0)
        }/s, kafka ${rates.delivered.kafka[round]!.toFixed(0)}/s`,
    );
  }
  const ratio = (ours: number[], memory: number[]) =>
    median(ours.map((rate, i) => rate / memory[i]!));
  console.log(
    `median: intake memory ${median(rates.intake.memory).toFixed(0)}/s, redis ${
      median(rates.intake.redis).toFixed(0)
    }/s; ` +
      `delivered memory ${median(rates.delivered.memory).toFixed(0)}/s, redis ${
        median(rates.delivered.redis).toFixed(0)
      }/s, kafka ${median(rates.delivered.kafka).toFixed(0)}/s`,
  );
  // A second process beside the Redis and the Kafka relay (intake only: the deliveries are measured already).
  const peers = {
    redis: await startPinnedServer(["--import", "tsx", "server.ts"], {
      ...base,
      ...onRedis("bench-relay"),
      WORKER_CONCURRENCY: "0",
    }),
    kafka: await startPinnedServer(["--import", "tsx", "server.ts"], {
      ...base,
      ...onKafka,
      WORKER_CONCURRENCY: "0",
    }),
  };
  const worst: Record<string, number> = {};
  try {
    for (const name of ["redis", "kafka"] as const) {
      const took = await propagation(relays[name].url, peers[name].url);
      worst[name] = Math.max(...took);
      console.log(
        `configuration on ${name}: a change served by the other process after ${
          median(took).toFixed(0)
        } ms (median of ${CHANGES}), ${worst[name]!.toFixed(0)} ms at worst`,
      );
    }
  } finally {
    for (const peer of Object.values(peers)) peer.child.kill("SIGTERM");
    await Promise.all(
      Object.values(peers).map((
        peer,
      ) => (peer.child.exitCode === null ? once(peer.child, "exit") : undefined)),
    );
  }
  const intakeRatio = ratio(rates.intake.redis, rates.intake.memory);
  const deliveredRatio = ratio(rates.delivered.redis, rates.delivered.memory);
  const kafkaRatio = ratio(rates.delivered.kafka, rates.delivered.memory);
  report([
    {
      name: "relay intake on Redis",
      measure:
        "accepted webhooks/s, intake-only process on Redis / on memory, median of paired rounds",
      ratio: intakeRatio,
      target: ">= 0.5",
      pass: intakeRatio >= 0.5,
    },
    {
      name: "relay end to end on Redis",
      measure: "messages delivered/s, intake to receiver, Redis / memory, median of paired rounds",
      ratio: deliveredRatio,
      target: ">= 0.5",
      pass: deliveredRatio >= 0.5,
    },
    {
      name: "relay end to end on Kafka",
      measure:
        "messages delivered/s, intake to receiver, Kafka (mock cluster) / memory, median of paired rounds",
      ratio: kafkaRatio,
      target: ">= 0.3",
      pass: kafkaRatio >= 0.3,
    },
    ...(["redis", "kafka"] as const).map((name) => ({
      name: `relay configuration on ${name === "redis" ? "Redis" : "Kafka"}`,
      measure:
        `worst time for an endpoint changed on one process to be served by another, of ${CHANGES} changes / 1 s`,
      ratio: worst[name]! / 1000,
      target: "< 1",
      pass: worst[name]! < 1000,
    })),
  ]);
} finally {
  rounds.close();
  // The relays stop first, while their backends are still there to say goodbye to.
  const servers = [...Object.values(intake), ...Object.values(relays), receiver];
  for (const server of servers) server.child.kill("SIGTERM");
  await Promise.all(
    servers.map((
      server,
    ) => (server.child.exitCode === null ? once(server.child, "exit") : undefined)),
  );
  redis.child.kill("SIGTERM");
  await kafka.stop();
}
