// The contract of a login limiter: LoginThrottle in memory, PostgresLoginThrottle shared.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KNOWN_ADDRESS_MS } from "../../lib/auth/login_throttle.ts";
import {
  type LoginLimiter,
  type LoginSubject,
  type LoginThrottleOptions,
} from "../../lib/auth/mod.ts";

/** A user name as the throttle counts it. */
function user(name: string): LoginSubject {
  return { kind: "user", name };
}

/**
 * Runs the LoginLimiter contract.
 * @param name the implementation's name
 * @param make builds an empty limiter with these options
 */
export function loginLimiterContract(
  name: string,
  make: (options: LoginThrottleOptions) => Promise<LoginLimiter> | LoginLimiter,
): void {
  describe(`LoginLimiter contract: ${name}`, () => {
    it("counts a name's failures per address: past the limit that pair waits, doubling, and the name from elsewhere does not", async () => {
      let t = 0;
      const throttle = await make({
        now: () => t,
        maxPerUser: 2,
        maxPerName: 0,
        maxPerAddress: 0,
        windowMs: 60_000,
      });
      assert.equal(await throttle.start(user("ann"), "attacker"), 0);
      assert.equal(await throttle.start(user("ann"), "attacker"), 0);
      assert.equal(
        await throttle.start(user("ann"), "attacker"),
        1,
        "at the limit: 1 s after the last failure",
      );
      assert.equal(
        await throttle.start(user("ann"), "phone"),
        0,
        "no lockout: the owner's address has not failed",
      );
      await throttle.succeed(user("ann"), "phone");
      t = 1000;
      assert.equal(
        await throttle.start(user("ann"), "attacker"),
        0,
        "the wait has passed; this attempt counts",
      );
      assert.equal(
        await throttle.start(user("ann"), "attacker"),
        2,
        "one failure more: twice as long",
      );
      t = 3000;
      assert.equal(await throttle.start(user("ann"), "attacker"), 0);
      assert.equal(await throttle.start(user("ann"), "attacker"), 4, "and twice again");
      await throttle.succeed(user("ann"), "attacker");
      assert.equal(
        await throttle.start(user("ann"), "attacker"),
        0,
        "a success clears the pair's failures",
      );
    });

    it("forgets failures older than the window", async () => {
      let t = 0;
      const throttle = await make({
        now: () => t,
        maxPerUser: 1,
        maxPerAddress: 0,
        windowMs: 10_000,
      });
      assert.equal(await throttle.start(user("bo"), "x"), 0);
      t = 1000;
      assert.equal(await throttle.start(user("bo"), "x"), 0);
      assert.equal(await throttle.start(user("bo"), "x"), 2);
      t = 11_000;
      assert.equal(await throttle.start(user("bo"), "x"), 0, "both failures have left the window");
      assert.equal(await throttle.start(user("bo"), "x"), 1, "and the count starts again");
    });

    it("counts an attempt from its start, so parallel attempts cannot pass the limit together", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 3 });
      const started = await Promise.all(
        Array.from({ length: 10 }, () => throttle.start(user("bob"), "10.0.0.1")),
      );
      assert.equal(started.filter((wait) => wait === 0).length, 3);
    });

    it("limits one address across names, takes successes back, and can do without the address limit", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 100, maxPerAddress: 2 });
      assert.equal(await throttle.start(user("a1"), "proxy"), 0);
      await throttle.succeed(user("a1"), "proxy");
      assert.equal(await throttle.start(user("a2"), "proxy"), 0);
      assert.equal(await throttle.start(user("a3"), "proxy"), 0);
      assert.equal(
        await throttle.start(user("a4"), "proxy"),
        1,
        "two failures from the address: it waits",
      );
      assert.equal(await throttle.start(user("a4"), "elsewhere"), 0, "another address does not");
      const open = await make({ now: () => 0, maxPerUser: 100, maxPerAddress: 0 });
      for (let i = 0; i < 50; i++) assert.equal(await open.start(user(`n${i}`), "proxy"), 0);
    });

    it("adds up a name's failures over every address: past the limit each new address waits, growing", async () => {
      let t = 0;
      const throttle = await make({
        now: () => t,
        maxPerUser: 5,
        maxPerName: 3,
        maxPerAddress: 0,
        windowMs: 60_000,
      });
      for (let i = 0; i < 3; i++) assert.equal(await throttle.start(user("ann"), `10.0.0.${i}`), 0);
      assert.equal(
        await throttle.start(user("ann"), "10.0.0.9"),
        1,
        "three failures from three addresses: a fourth address waits",
      );
      assert.equal(await throttle.start(user("bob"), "10.0.0.9"), 0, "another name does not");
      t = 1000;
      assert.equal(await throttle.start(user("ann"), "10.0.0.9"), 0);
      assert.equal(await throttle.start(user("ann"), "10.0.0.10"), 2, "twice as long");
    });

    it("never slows the name at an address where it succeeded, whatever the guesses from elsewhere", async () => {
      let t = 0;
      const throttle = await make({
        now: () => t,
        maxPerUser: 5,
        maxPerName: 3,
        maxPerAddress: 0,
        windowMs: 60_000,
      });
      assert.equal(await throttle.start(user("ann"), "home"), 0);
      await throttle.succeed(user("ann"), "home");
      for (let i = 0; i < 3; i++) assert.equal(await throttle.start(user("ann"), `bot${i}`), 0);
      assert.ok((await throttle.start(user("ann"), "phone")) > 0, "a new address waits");
      assert.equal(await throttle.start(user("ann"), "home"), 0, "the known one does not");
      await throttle.succeed(user("ann"), "home");
      t = KNOWN_ADDRESS_MS - 1;
      for (let i = 0; i < 3; i++) assert.equal(await throttle.start(user("ann"), `bot${i}`), 0);
      assert.equal(
        await throttle.start(user("ann"), "home"),
        0,
        "still known 30 days after its last success",
      );
      t = 2 * KNOWN_ADDRESS_MS;
      for (let i = 0; i < 3; i++) assert.equal(await throttle.start(user("ann"), `bot${i}`), 0);
      assert.ok((await throttle.start(user("ann"), "home")) > 0, "no longer known 30 days after");
    });

    it("takes a success back from the name's count, and counts the known address's failures only per pair", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 2, maxPerName: 2, maxPerAddress: 0 });
      assert.equal(await throttle.start(user("ann"), "phone"), 0);
      await throttle.succeed(user("ann"), "phone");
      assert.equal(await throttle.start(user("ann"), "laptop"), 0);
      await throttle.succeed(user("ann"), "laptop");
      assert.equal(
        await throttle.start(user("ann"), "bot"),
        0,
        "two successes from new addresses count nothing against the name",
      );
      assert.equal(await throttle.start(user("ann"), "phone"), 0);
      assert.equal(await throttle.start(user("ann"), "phone"), 0);
      assert.equal(
        await throttle.start(user("ann"), "phone"),
        1,
        "a known address still has its pair limit",
      );
      assert.equal(
        await throttle.start(user("ann"), "bot2"),
        0,
        "and its failures do not count against the name",
      );
    });

    it("checks without counting, and takes back nothing for a success it did not count", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 2, maxPerName: 0, maxPerAddress: 3 });
      const client = { kind: "client", name: "backend" } as const;
      for (let i = 0; i < 10; i++) {
        assert.equal(await throttle.check(client, "10.0.0.9"), 0, "a check counts nothing");
      }
      assert.equal(await throttle.start(user("x1"), "10.0.0.9"), 0);
      assert.equal(await throttle.start(user("x2"), "10.0.0.9"), 0);
      await throttle.succeed(client, "10.0.0.9", { counted: false });
      assert.equal(
        await throttle.start(user("x3"), "10.0.0.9"),
        0,
        "the address's two failures are still counted: the third is allowed",
      );
      assert.equal(
        await throttle.check(client, "10.0.0.9"),
        1,
        "and now the address waits, for a check too",
      );
    });

    it("keeps user names and client ids apart", async () => {
      const throttle = await make({ now: () => 0, maxPerUser: 1, maxPerName: 1, maxPerAddress: 0 });
      assert.equal(await throttle.start(user("backend"), "x"), 0);
      assert.equal(await throttle.start(user("backend"), "x"), 1);
      assert.equal(
        await throttle.start({ kind: "client", name: "backend" }, "x"),
        0,
        "the client of that id is not the user of that name",
      );
      assert.equal(await throttle.start({ kind: "client", name: "backend" }, "y"), 1);
    });
  });
}
