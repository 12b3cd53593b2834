// The backends an app resolves once: the state folder's path, and one Redis
// connection for every module on one server, closed after the modules.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { createClient } from "redis";
import { createApp, openBackends, readConfig } from "../../lib/app/mod.ts";
import { makeRequest } from "../_helpers/http.ts";
import { redisServerSkip, startRedis } from "../_helpers/redis.ts";

const quiet = { info: () => {}, error: () => {} };

describe("openBackends()", () => {
  it("gives STATE_DIR's path as read, and opens nothing until asked", async () => {
    const backends = openBackends(readConfig({ STATE_DIR: "/srv/state" }).storage, {
      log: quiet,
      now: () => 0,
    });
    assert.equal(backends.stateDirPath, "/srv/state");
    assert.equal(backends.postgres, undefined, "no pool without DATABASE_URL");
    await backends.close();
  });
});

describe(
  "createApp() on one Redis for the relay and the rate limits",
  { skip: redisServerSkip },
  () => {
    it("uses one connection for both, and closes it after every module", async () => {
      // A server of this test's own (a folder given), so that its connections are the app's alone.
      const dir = mkdtempSync(join(tmpdir(), "tributary-backends-"));
      const redis = await startRedis(dir);
      const probe = createClient({ url: redis.url });
      await probe.connect();
      const own = String(await probe.sendCommand(["CLIENT", "ID"]));
      /** The connections to the server besides the probe's own. */
      const others = async (): Promise<number> =>
        String(await probe.sendCommand(["CLIENT", "LIST"])).split("\n").filter((line) =>
          line.startsWith("id=") && !line.startsWith(`id=${own} `)
        ).length;
      const app = createApp(
        readConfig({
          SERVICES: "water,relay",
          STATE_DIR: "",
          STORAGE_TYPE: "redis",
          REDIS_URL: redis.url,
          RATE_LIMIT_REDIS_URL: redis.url,
        }),
        { log: quiet },
      );
      try {
        await app.start();
        const intake = await app.handler(makeRequest({
          method: "POST",
          path: "/webhook",
          headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
          body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
        }));
        assert.equal(intake.status, 202, "a webhook queued in Redis");
        const page = await app.handler(makeRequest({
          method: "GET",
          path: "/v1/odata/v4/Locations",
          query: "$top=1",
          headers: { "x-api-key": "tributary-demo-key" },
        }));
        assert.equal(page.status, 200, "a request counted in Redis");
        assert.equal(await others(), 1);
        await app.close();
        assert.equal(await others(), 0);
      } finally {
        await app.close();
        await probe.close();
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
