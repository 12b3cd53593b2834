// Relay intake: accepted webhooks per second on POST /webhook (memory
// backend, 1 KiB events, one endpoint) against a bare node:http server that
// reads and parses the same bodies and answers 202; same load generator and
// connections. Target: >= 0.6x. And the same intake with the memory queue
// journaled in STATE_DIR (every accepted message on disk, written with
// O_DSYNC, before its 202) against it without the journal, both with 64
// connections: target >= 0.5x. A durable intake answers a client only once
// its commit is on disk, so with few connections it measures the disk's
// latency (connections / commit time); with 64 the commits of one turn carry
// tens of messages each, as they do under the load a relay is built for.
//
// Intake is measured on an intake-only process (WORKER_CONCURRENCY=0, as a
// relay split into intake and delivery processes runs): on this benchmark's
// single pinned core, deliveries running in the same process would take the
// CPU that intake is measured by, and end-to-end delivery has its own
// benchmark (bench/deliver.ts). The rate with deliveries running beside
// intake is printed too.
//
// The machine's speed drifts by tens of percent from one second to the next,
// so the servers take turns in short runs, round after round, and the figure
// is the median of each round's ratio.
// Needs: a journal in a temporary folder (under 1 GB), about 1 minute.
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { report } from "./_data.ts";
import type { LoadOptions } from "./_load.ts";
import { measureTurn, median, runPinnedLoad, startPinnedServer } from "./_processes.ts";
import { oneTenantRelay } from "./_relay_rounds.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 2);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 9);
const KEY = "bench-intake-key";
const BODY = JSON.stringify({
  event: "order.created",
  data: { order: "o-1", note: "x".repeat(960) },
});

// The endpoint's receiver, in this process: answers 200 at once.
let delivered = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    delivered++;
    res.writeHead(200, { "content-length": "0" });
    res.end();
  });
});
receiver.listen(0, "127.0.0.1");
await once(receiver, "listening");
const relayEnv = oneTenantRelay(
  KEY,
  `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
);
const servers = {
  bare: await startPinnedServer(["--import", "tsx", "bench/_intake_baseline.ts"]),
  intake: await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...relayEnv,
    WORKER_CONCURRENCY: "0",
  }),
  journaled: await startPinnedServer(["--import", "tsx", "server.ts"], {
    ...relayEnv,
    WORKER_CONCURRENCY: "0",
    STATE_DIR: mkdtempSync(join(tmpdir(), "tributary-bench-intake-")),
  }),
  delivering: await startPinnedServer(["--import", "tsx", "server.ts"], relayEnv),
};
const request = (url: string, seconds: number, connections = 10): LoadOptions => ({
  url: `${url}/webhook`,
  method: "POST",
  headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
  body: BODY,
  connections,
  seconds,
});
/** Waits (at most 30 s) until the delivering server's backlog is delivered, so it takes no CPU from the next round. */
async function drained(): Promise<void> {
  let last = -1;
  for (let i = 0; i < 300 && delivered !== last; i++) {
    last = delivered;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

try {
  /**
   * Messages the intake-only process holds (its queue has no worker, so it
   * keeps them all): its cost a webhook grows with them, the collections of
   * its heap being most of what it adds to bare's.
   */
  let held = 0;
  for (const server of Object.values(servers)) {
    const warm = await runPinnedLoad(request(server.url, 1));
    if (server === servers.intake) held += warm.requests;
  }
  const rates = {
    bare: [] as number[],
    intake: [] as number[],
    intake64: [] as number[],
    journaled: [] as number[],
    delivering: [] as number[],
  };
  const runs = [["bare", "bare", 10], ["intake", "intake", 10], ["intake64", "intake", 64], [
    "journaled",
    "journaled",
    64,
  ], ["delivering", "delivering", 10]] as const;
  /** Server CPU µs per request of bare and intake-only (10 connections), each round. */
  const cpu = { bare: [] as number[], intake: [] as number[] };
  for (let round = 0; round < ROUNDS; round++) {
    const heldBefore = held;
    for (const [name, server, connections] of runs) {
      const result = await measureTurn(
        servers[server].child,
        request(servers[server].url, SECONDS, connections),
      );
      if (result.non2xx > 0) {
        throw new Error(`${name}: ${result.non2xx} non-2xx responses, e.g. ${result.sample}`);
      }
      rates[name].push(result.perSecond);
      if (name === "bare" || name === "intake") cpu[name].push(result.cpu * 1e6 / result.requests);
      if (server === "intake") held += result.requests;
    }
    await drained();
    console.log(
      `round ${round + 1}: bare ${rates.bare[round]!.toFixed(0)}/s ${
        cpu.bare[round]!.toFixed(1)
      } µs, intake-only ${rates.intake[round]!.toFixed(0)}/s ${
        cpu.intake[round]!.toFixed(1)
      } µs (holding ${heldBefore} messages); 64 connections: ` +
        `intake-only ${rates.intake64[round]!.toFixed(0)}/s, journaled ${
          rates.journaled[round]!.toFixed(0)
        }/s; intake with deliveries ${rates.delivering[round]!.toFixed(0)}/s`,
    );
  }
  const ratio = median(rates.intake.map((rate, i) => rate / rates.bare[i]!));
  const journaled = median(rates.journaled.map((rate, i) => rate / rates.intake64[i]!));
  const sharing = median(rates.delivering.map((rate, i) => rate / rates.bare[i]!));
  console.log(
    `median: bare ${median(rates.bare).toFixed(0)} req/s, intake-only ${
      median(rates.intake).toFixed(0)
    } webhooks/s, intake with deliveries on the same core ${
      median(rates.delivering).toFixed(0)
    } webhooks/s (${sharing.toFixed(3)}x bare; the receiver got ${delivered})`,
  );
  report([
    {
      name: "relay intake",
      measure:
        `accepted webhooks/s (intake-only process) / bare node:http parse-and-202 req/s, median of paired rounds (server CPU ${
          median(cpu.intake).toFixed(1)
        } µs per webhook, bare ${median(cpu.bare).toFixed(1)} µs)`,
      ratio,
      target: ">= 0.6",
      pass: ratio >= 0.6,
    },
    {
      name: "relay intake, journaled",
      measure:
        "accepted webhooks/s with 64 connections, memory queue journaled in STATE_DIR / not journaled (intake-only), median of paired rounds",
      ratio: journaled,
      target: ">= 0.5",
      pass: journaled >= 0.5,
    },
  ]);
} finally {
  for (const server of Object.values(servers)) server.child.kill("SIGTERM");
  receiver.close();
  receiver.closeAllConnections();
}
