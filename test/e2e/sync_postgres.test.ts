// The token and sync service on PostgreSQL as it runs in production: two
// processes behind one database, and the database stopped under load for ten
// seconds and started again.
import assert from "node:assert/strict";
import { once } from "node:events";
import { after, before, describe, it } from "node:test";
import {
  postgresServerSkip,
  postgresSkip,
  startPostgres,
  type TestPostgres,
} from "../_helpers/postgres.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";
import { login, message, patch, signUp, syncGet, ticketEnd } from "../_helpers/sync_client.ts";

const PASSWORD = "correct horse battery";

async function stop(started: Started): Promise<void> {
  started.child.kill("SIGTERM");
  await once(started.child, "exit");
}

describe("two processes on one database", { skip: postgresSkip }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres();
  });
  after(() => server.stop());

  it("share users, tokens, one history with strictly increasing serials, and tickets", async () => {
    const env = {
      SERVICES: "sync",
      DATABASE_URL: await server.database(),
      PASSWORD_HASH_COST: "1024",
      SYNC_MAX_QUEUED_PER_USER: "64",
    };
    const [a, b] = [startServer(env), startServer(env)];
    try {
      const [urlA, urlB] = [await listeningUrl(a), await listeningUrl(b)];
      assert.equal(await signUp(urlA, "ada", PASSWORD), 201);
      assert.equal(
        await signUp(urlB, "Ada", "another password"),
        409,
        "a name taken on one is taken on the other",
      );
      const access = (await login(urlA, "ada", PASSWORD)).body.access_token!;
      const base = await syncGet(urlB, access);
      assert.equal(base.status, 200, "a token issued by one works on the other");
      const urls = [urlA, urlB];
      // One at a time, alternating: each lands as the next serial.
      let serial = base.body.data!.serial;
      for (let n = 1; n <= 20; n++) {
        const accepted = await patch(urls[n % 2]!, access, {
          objects: { messages: [message(n)] },
          serial: n,
        });
        assert.equal(accepted.status, 202);
        // The ticket followed on the process that did not create it.
        assert.equal(
          await ticketEnd(urls[(n + 1) % 2]!, access, accepted.body.ticket!.uuid),
          "done",
        );
        const head = await syncGet(urls[n % 2]!, access);
        assert.equal(head.body.data!.serial, serial + 1, `patch ${n}`);
        serial = head.body.data!.serial;
      }
      // Twenty more at once, half on each: one history still, nothing lost or doubled.
      const burst = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          patch(urls[i % 2]!, access, {
            objects: { messages: [message(100 + i)] },
            serial: 100 + i,
          })),
      );
      for (const [i, accepted] of burst.entries()) {
        assert.equal(
          await ticketEnd(urls[(i + 1) % 2]!, access, accepted.body.ticket!.uuid),
          "done",
        );
      }
      for (const url of urls) {
        const diff = await syncGet(url, access, `/since/${base.body.data!.revision}`);
        assert.equal(diff.status, 200);
        const data = diff.body.data as unknown as {
          serial: number;
          objects: { messages: unknown[] };
        };
        assert.equal(data.serial, base.body.data!.serial + 40, "forty revisions, one serial each");
        assert.equal(
          data.objects.messages.length,
          40,
          "every patch appears in a diff read from either process",
        );
      }
    } finally {
      await stop(a);
      await stop(b);
    }
  });
});

describe("the database stopped for ten seconds under load", { skip: postgresServerSkip }, () => {
  let server: TestPostgres;
  before(async () => {
    server = await startPostgres(true);
  });
  after(() => server.stop());

  it("answers 503 with Retry-After or succeeds, loses no write answered 2xx, and recovers without a restart", async () => {
    const started = startServer({
      SERVICES: "sync",
      DATABASE_URL: await server.database(),
      PASSWORD_HASH_COST: "1024",
      DATABASE_STATEMENT_TIMEOUT_MS: "2000",
      SYNC_MAX_QUEUED_PER_USER: "100000",
    });
    try {
      const url = await listeningUrl(started);
      assert.equal(await signUp(url, "ada", PASSWORD), 201);
      const access = (await login(url, "ada", PASSWORD)).body.access_token!;
      const statuses = new Map<number, number>();
      const accepted = new Map<number, string>();
      const missingRetryAfter: number[] = [];
      let phase: "before" | "down" | "after" = "before";
      let recoveredAt = 0;
      let next = 0;
      const worker = async (): Promise<void> => {
        // Bounded: each loop stops when the phases are over, and at the latest after 100,000 requests.
        for (
          let i = 0;
          i < 100_000 && !(phase === "after" && recoveredAt > 0 && Date.now() - recoveredAt > 1000);
          i++
        ) {
          const n = next++;
          const answer = n % 2 === 0
            ? await patch(url, access, { objects: { messages: [message(n)] }, serial: n })
            : await syncGet(url, access);
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          if (answer.status === 503 && answer.retryAfter === null) missingRetryAfter.push(n);
          if (n % 2 === 0 && answer.status === 202) accepted.set(n, answer.body.ticket!.uuid);
          if (phase === "after" && answer.status < 300 && recoveredAt === 0) {
            recoveredAt = Date.now();
          }
        }
      };
      const workers = Array.from({ length: 4 }, worker);
      // Load runs a moment, then the database goes away for ten seconds, then comes back.
      const waitFor = async (condition: () => boolean): Promise<void> => {
        while (!condition()) {
          await Promise.race([
            ...workers,
            new Promise((resolve) => setImmediate(resolve)),
          ]);
        }
      };
      await waitFor(() => accepted.size >= 20);
      server.crash();
      phase = "down";
      const down = Date.now();
      await waitFor(() => Date.now() - down >= 10_000);
      server.restart();
      phase = "after";
      await Promise.all(workers);
      assert.ok(recoveredAt > 0, "the service answered again without a restart");
      assert.deepEqual(
        [...statuses.keys()].filter((status) => ![200, 202, 503].includes(status)),
        [],
        JSON.stringify([...statuses]),
      );
      assert.ok((statuses.get(503) ?? 0) > 0, "the outage was seen");
      assert.deepEqual(missingRetryAfter, [], "every 503 says when to retry");
      // Every patch answered 202, before, during or after the outage, is applied in the end.
      for (const ticket of accepted.values()) {
        assert.equal(await ticketEnd(url, access, ticket, 20_000), "done");
      }
      const snapshot = await syncGet(url, access);
      const keys = new Set(snapshot.body.data!.objects.messages.map((m) => m.uuid));
      for (const n of accepted.keys()) {
        assert.ok(
          keys.has(message(n)["uuid"] as string),
          `patch ${n} was answered 202 and is there`,
        );
      }
    } finally {
      await stop(started);
    }
  });
});
