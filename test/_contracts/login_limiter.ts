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
    it("counts a name's failures per address: past the limit that pair waits, doubling, and the name from elsewhere does not", async () => {
      let t = 0;
      const throttle = await make({ now: () => t, maxPerUser: 2, maxPerAddress: 0, windowMs: 60_000 });
      assert.equal(await throttle.start("ann", "attacker"), 0);
      assert.equal(await throttle.start("ann", "attacker"), 0);
      assert.equal(await throttle.start("ann", "attacker"), 1, "at the limit: 1 s after the last failure");
      assert.equal(await throttle.start("ann", "phone"), 0, "no lockout: the owner's address has not failed");
      await throttle.succeed("ann", "phone");
      t = 1000;
      assert.equal(await throttle.start("ann", "attacker"), 0, "the wait has passed; this attempt counts");
      assert.equal(await throttle.start("ann", "attacker"), 2, "one failure more: twice as long");
      t = 3000;
      assert.equal(await throttle.start("ann", "attacker"), 0);
      assert.equal(await throttle.start("ann", "attacker"), 4, "and twice again");
      await throttle.succeed("ann", "attacker");
      assert.equal(await throttle.start("ann", "attacker"), 0, "a success clears the pair's failures");
    });

    it("forgets failures older than the window", async () => {
      let t = 0;
      const throttle = await make({ now: () => t, maxPerUser: 1, maxPerAddress: 0, windowMs: 10_000 });
      assert.equal(await throttle.start("bo", "x"), 0);
      t = 1000;
      assert.equal(await throttle.start("bo", "x"), 0);
      assert.equal(await throttle.start("bo", "x"), 2);
      t = 11_000;
      assert.equal(await throttle.start("bo", "x"), 0, "both failures have left the window");
      assert.equal(await throttle.start("bo", "x"), 1, "and the count starts again");
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
      assert.equal(await throttle.start("a4", "proxy"), 1, "two failures from the address: it waits");
      assert.equal(await throttle.start("a4", "elsewhere"), 0, "another address does not");
      const open = await make({ now: () => 0, maxPerUser: 100, maxPerAddress: 0 });
      for (let i = 0; i < 50; i++) assert.equal(await open.start(`n${i}`, "proxy"), 0);
    });
  });
}
