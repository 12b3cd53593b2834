// Relay end to end: messages delivered per second, from POST /webhook to a
// loopback receiver (memory backend, 1 KiB events, one endpoint, default
// concurrency), against a plain loop in one Node process that POSTs the same
// signed webhook to the same receiver, as many at a time as the relay sends
// to one endpoint (ENDPOINT_CONCURRENCY, 8): the limit of delivery on this
// machine. The relay and the loop each run alone on the servers' CPU; the
// receiver runs on the other. Target: >= 0.5x. The best published
// self-hosted figure we know is 1,812 deliveries/s on 4 vCPU (hookstream:
// Express + BullMQ, 1 API and 3 worker processes); ours is printed beside it.
//
// A relay round sends COUNT webhooks, 10 at a time, and is timed from the
// first POST to the receiver's COUNT-th delivery; rounds alternate with the
// loop's, and the figure is the median of each round's ratio.
// Needs: no disk, about 1 minute.
import { report } from "./_data.ts";
import { cpuSeconds, median, runPinnedScript, startPinnedServer } from "./_processes.ts";
import { BENCH_SECRET, oneTenantRelay, RelayRounds } from "./_relay_rounds.ts";

const COUNT = Number(process.env["BENCH_DELIVER_COUNT"] ?? 20_000);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 5);
const CONCURRENCY = 8;
const KEY = "bench-deliver-key";
const WEBHOOK = JSON.stringify({
  event: "order.created",
  data: { order: "o-1", note: "x".repeat(960) },
});
// What the relay delivers for WEBHOOK, for the loop to send the same.
const DELIVERED = `{"type":"order.created","timestamp":"${new Date().toISOString()}","data":${
  JSON.stringify(JSON.parse(WEBHOOK).data)
}}`;

const receiver = await startPinnedServer(["--import", "tsx", "bench/_receiver.ts"], {}, "client");
const relay = await startPinnedServer(
  ["--import", "tsx", "server.ts"],
  oneTenantRelay(KEY, `${receiver.url}/hook`),
);
const rounds = new RelayRounds(receiver.url, KEY, WEBHOOK);
/** CPU µs per message of each round: the relay's process (intake and delivery), the loop's (its POSTs). */
const cpus = { relay: [] as number[], loop: [] as number[] };

async function relayRound(count: number): Promise<number> {
  const before = cpuSeconds(relay.child.pid!);
  const rate = await rounds.round(relay.url, count);
  cpus.relay.push((cpuSeconds(relay.child.pid!) - before) * 1e6 / count);
  return rate;
}

async function loopRound(count: number): Promise<number> {
  const result = await runPinnedScript<{ requests: number; seconds: number; cpuSeconds: number }>([
    "--import",
    "tsx",
    "bench/_signed_loop.ts",
    JSON.stringify({
      url: `${receiver.url}/hook`,
      count,
      concurrency: CONCURRENCY,
      body: DELIVERED,
      secret: BENCH_SECRET,
    }),
  ]);
  cpus.loop.push(result.cpuSeconds * 1e6 / result.requests);
  return result.requests / result.seconds;
}

try {
  await loopRound(2000);
  await relayRound(2000);
  // The warm-up rounds' CPU is not counted.
  cpus.relay.length = 0;
  cpus.loop.length = 0;
  const rates = { loop: [] as number[], relay: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    rates.loop.push(await loopRound(COUNT));
    rates.relay.push(await relayRound(COUNT));
    console.log(
      `round ${round + 1}: plain signed loop ${
        rates.loop[round]!.toFixed(0)
      }/s, relay intake to delivery ${rates.relay[round]!.toFixed(0)} messages/s`,
    );
  }
  const ratio = median(rates.relay.map((rate, i) => rate / rates.loop[i]!));
  console.log(
    `median: loop ${median(rates.loop).toFixed(0)}/s, relay ${
      median(rates.relay).toFixed(0)
    } delivered messages/s on one CPU (published best self-hosted: 1,812/s on 4 vCPU)`,
  );
  report([{
    name: "relay end to end",
    measure:
      `messages delivered/s, intake to receiver / plain loop of the same signed POSTs, median of paired rounds (CPU ${
        median(cpus.relay).toFixed(1)
      } µs per message in the relay's process, intake and delivery; the loop's ${
        median(cpus.loop).toFixed(1)
      } µs per POST)`,
    ratio,
    target: ">= 0.5",
    pass: ratio >= 0.5,
  }]);
} finally {
  rounds.close();
  relay.child.kill("SIGTERM");
  receiver.child.kill("SIGTERM");
}
