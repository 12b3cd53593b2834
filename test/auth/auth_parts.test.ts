import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { loginLimiterContract } from "../_contracts/login_limiter.ts";
import { hashPassword, LoginThrottle, parseClients, verifyPassword } from "../../lib/auth/mod.ts";
import { newToken } from "../../lib/auth/tokens.ts";
import { throttleKeys, throttleLimits } from "../../lib/auth/login_throttle.ts";
import { pooledRandom } from "../../lib/crypto/mod.ts";
import { TEST_COST } from "../_helpers/auth.ts";

const SALTS = pooledRandom();

describe("hashPassword() and verifyPassword()", () => {
  it("verifies the right password and refuses a wrong one", async () => {
    const hash = await hashPassword("correct horse", { cost: TEST_COST, salt: SALTS(16) });
    assert.match(hash, /^scrypt\$1024\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.equal(await verifyPassword("correct horse", hash), true);
    assert.equal(await verifyPassword("correct horsE", hash), false);
  });

  it("salts: the same password hashes differently", async () => {
    assert.notEqual(
      await hashPassword("pw", { cost: TEST_COST, salt: SALTS(16) }),
      await hashPassword("pw", { cost: TEST_COST, salt: SALTS(16) }),
    );
  });

  it("is deterministic for a given salt, and treats Unicode forms alike", async () => {
    const salt = new Uint8Array(16).fill(7);
    assert.equal(
      await hashPassword("caf\u00e9", { cost: TEST_COST, salt }),
      await hashPassword("cafe\u0301", { cost: TEST_COST, salt }),
    );
  });

  it("refuses a malformed hash and a bad cost", async () => {
    assert.equal(await verifyPassword("pw", "md5$abc"), false);
    await assert.rejects(hashPassword("pw", { cost: 1000, salt: SALTS(16) }), RangeError);
    assert.equal(
      await verifyPassword("pw", "scrypt$3$8$1$AAAA$AAAA"),
      false,
      "a cost that is not a power of two",
    );
  });
});

loginLimiterContract("LoginThrottle", (options) => new LoginThrottle(options));

describe("LoginThrottle", () => {
  it("forgets the oldest names beyond its bound", () => {
    const kept = new LoginThrottle({ now: () => 0, maxPerUser: 1, maxKeys: 100 });
    const bounded = new LoginThrottle({ now: () => 0, maxPerUser: 1, maxKeys: 4 });
    for (const throttle of [kept, bounded]) {
      throttle.start({ kind: "user", name: "first" }, "x");
      for (let i = 0; i < 5; i++) throttle.start({ kind: "user", name: `u${i}` }, `a${i}`);
    }
    assert.equal(kept.start({ kind: "user", name: "first" }, "x"), 1, "remembered: the pair waits");
    assert.equal(
      bounded.start({ kind: "user", name: "first" }, "x"),
      0,
      "forgotten beyond the bound",
    );
  });
});

describe("parseClients()", () => {
  it("hashes a plain secret and keeps a sha256 one; a client without a secret is public", () => {
    const [a, b, c] = parseClients([
      {
        client_id: "a",
        client_secret: "s",
        grant_types: ["client_credentials"],
        scopes: ["SignUp"],
      },
      {
        client_id: "b",
        client_secret: `sha256:${"A".repeat(64)}`,
        grant_types: ["client_credentials"],
        scopes: [],
      },
      { client_id: "c", grant_types: ["password"], scopes: ["UserActivity"] },
    ]);
    assert.equal(a!.secretHash, "043a718774c572bd8a25adbeb1bfcd5c0256ae11cecf9f9c3f925d0e52beaf89");
    assert.equal(b!.secretHash, "a".repeat(64));
    assert.equal(c!.secretHash, undefined);
  });

  const bad = [
    { name: "a non-array", value: {} },
    { name: "a missing client_id", value: [{ grant_types: ["password"], scopes: [] }] },
    {
      name: "a repeated client_id",
      value: [{ client_id: "a", grant_types: ["password"], scopes: [] }, {
        client_id: "a",
        grant_types: ["password"],
        scopes: [],
      }],
    },
    {
      name: "an unknown grant",
      value: [{ client_id: "a", grant_types: ["implicit"], scopes: [] }],
    },
    {
      name: "an unknown scope",
      value: [{ client_id: "a", grant_types: ["password"], scopes: ["Admin"] }],
    },
    {
      name: "client_credentials without a secret",
      value: [{ client_id: "a", grant_types: ["client_credentials"], scopes: [] }],
    },
    {
      name: "a malformed sha256 secret",
      value: [{
        client_id: "a",
        client_secret: "sha256:abc",
        grant_types: ["password"],
        scopes: [],
      }],
    },
  ] as const;
  for (const c of bad) {
    it(`refuses ${c.name}`, () => assert.throws(() => parseClients(c.value), TypeError));
  }
});

describe("newToken()", () => {
  it("makes 43 base64url characters from 32 random bytes", () => {
    const bytes = Uint8Array.from({ length: 32 }, (_, i) => i * 7);
    const token = newToken((size) => (size === 32 ? bytes : new Uint8Array(size)));
    assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(token, Buffer.from(bytes).toString("base64url"));
  });
});

describe("throttleKeys()", () => {
  it("counts an IPv6 address by its /64 and an IPv4-mapped one as IPv4", () => {
    const limits = throttleLimits({ now: () => 0 });
    const keyOf = (address: string) => {
      const keys = throttleKeys({ kind: "user", name: "ann" }, address, limits);
      return [keys.pair.key, keys.address?.key, keys.known];
    };
    assert.deepEqual(
      keyOf("2001:db8:1:2:aaaa::1"),
      keyOf("2001:0db8:0001:0002:ffff:ffff:ffff:ffff"),
    );
    assert.deepEqual(keyOf("2001:db8:1:2::7"), [
      "ua:2001:db8:1:2::/64 ann",
      "a:2001:db8:1:2::/64",
      "uk:2001:db8:1:2::/64 ann",
    ]);
    assert.notDeepEqual(keyOf("2001:db8:1:3::7"), keyOf("2001:db8:1:2::7"));
    assert.deepEqual(keyOf("::ffff:203.0.113.9"), keyOf("203.0.113.9"));
    assert.deepEqual(keyOf("::1"), [
      "ua:0:0:0:0::/64 ann",
      "a:0:0:0:0::/64",
      "uk:0:0:0:0::/64 ann",
    ]);
  });

  it("gives a client id keys of its own kind, and leaves out the limits set to 0", () => {
    const keys = throttleKeys(
      { kind: "client", name: "ann" },
      "192.0.2.1",
      throttleLimits({ now: () => 0, maxPerName: 0, maxPerAddress: 0 }),
    );
    assert.deepEqual(keys, {
      pair: { key: "ca:192.0.2.1 ann", limit: 5 },
      name: undefined,
      address: undefined,
      known: "ck:192.0.2.1 ann",
    });
  });
});

describe("throttleLimits()", () => {
  it("fills in the defaults: 5 per pair, 10 per name, 20 per address, 15 minutes", () => {
    assert.deepEqual(throttleLimits({ now: () => 0 }), {
      maxPerUser: 5,
      maxPerName: 10,
      maxPerAddress: 20,
      windowMs: 900_000,
    });
  });

  for (
    const bad of [{ maxPerUser: 0 }, { maxPerName: -1 }, { maxPerAddress: 1.5 }, { windowMs: 0 }]
  ) {
    it(`refuses ${JSON.stringify(bad)}`, () =>
      assert.throws(() => throttleLimits({ now: () => 0, ...bad }), RangeError));
  }
});
