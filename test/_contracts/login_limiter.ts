// The contract of a login limiter: LoginThrottle in memory, PostgresLoginThrottle shared.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { LoginLimiter, LoginThrottleOptions } from "../../lib/auth/mod.ts";

/**
 * Runs the LoginLimiter contract.
 * @param name the implementation's name
 * @param make builds an empty limiter with these options
 */
export function loginLimiterContract(name: string, make: (options: LoginThrottleOptions) => Promise<LoginLimiter> | LoginLimiter): void {
  describe(`LoginLimiter contract: ${name}`, () => {
    it("counts attempts per name in a sliding window; a success clears the name's count", async () => {
      let t = 0;
      const throttle = await make({ now: () => t, maxPerUser: 2, windowMs: 1000 });
      assert.equal(await throttle.start("Ann", "a"), 0);
      assert.equal(await throttle.start("ann", "b"), 0);
      assert.equal(await throttle.start("ANN", "c"), 1, "the third within the window waits");
      await throttle.succeed("ann", "b");
      assert.equal(await throttle.start("ann", "b"), 0);
      assert.equal(await throttle.start("ann", "b"), 0);
      t = 1000;
      assert.equal(await throttle.start("ann", "b"), 0, "the window has passed");
    });

    it("counts an attempt from its start, so parallel attempts cannot pass the limit together", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 3 });
      const started = await Promise.all(Array.from({ length: 10 }, () => throttle.start("bob", "10.0.0.1")));
      assert.equal(started.filter((wait) => wait === 0).length, 3);
    });

    it("limits one address across names, takes successes back, and can do without the address limit", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 100, maxPerAddress: 2 });
      assert.equal(await throttle.start("a1", "proxy"), 0);
      await throttle.succeed("a1", "proxy");
      assert.equal(await throttle.start("a2", "proxy"), 0);
      assert.equal(await throttle.start("a3", "proxy"), 0);
      assert.ok((await throttle.start("a4", "proxy")) > 0, "two failures from the address");
      const open = await make({ now: () => 0, maxPerUser: 100, maxPerAddress: 0 });
      for (let i = 0; i < 50; i++) assert.equal(await open.start(`n${i}`, "proxy"), 0);
    });
  });
}
