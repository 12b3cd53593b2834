import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hashPassword, LoginThrottle, newToken, parseClients, verifyPassword } from "../../lib/auth/mod.ts";
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
    assert.notEqual(await hashPassword("pw", { cost: TEST_COST, salt: SALTS(16) }), await hashPassword("pw", { cost: TEST_COST, salt: SALTS(16) }));
  });

  it("is deterministic for a given salt, and treats Unicode forms alike", async () => {
    const salt = new Uint8Array(16).fill(7);
    assert.equal(await hashPassword("caf\u00e9", { cost: TEST_COST, salt }), await hashPassword("cafe\u0301", { cost: TEST_COST, salt }));
  });

  it("refuses a malformed hash and a bad cost", async () => {
    assert.equal(await verifyPassword("pw", "md5$abc"), false);
    await assert.rejects(hashPassword("pw", { cost: 1000, salt: SALTS(16) }), RangeError);
    assert.equal(await verifyPassword("pw", "scrypt$3$8$1$AAAA$AAAA"), false, "a cost that is not a power of two");
  });
});

describe("LoginThrottle", () => {
  it("counts attempts per name in a sliding window; a success clears the name's count", () => {
    let t = 0;
    const throttle = new LoginThrottle({ now: () => t, maxPerUser: 2, windowMs: 1000 });
    assert.equal(throttle.start("Ann", "a"), 0);
    assert.equal(throttle.start("ann", "b"), 0);
    assert.equal(throttle.start("ANN", "c"), 1, "the third within the window waits");
    throttle.succeed("ann", "b");
    assert.equal(throttle.start("ann", "b"), 0);
    assert.equal(throttle.start("ann", "b"), 0);
    t = 1000;
    assert.equal(throttle.start("ann", "b"), 0, "the window has passed");
  });

  it("counts an attempt from its start, so parallel attempts cannot pass the limit together", () => {
    const throttle = new LoginThrottle({ now: () => 0, maxPerUser: 3 });
    const started = Array.from({ length: 10 }, () => throttle.start("bob", "10.0.0.1"));
    assert.deepEqual(started.filter((wait) => wait === 0).length, 3);
  });

  it("limits one address across names, takes successes back, and can do without the address limit", () => {
    const throttle = new LoginThrottle({ now: () => 0, maxPerUser: 100, maxPerAddress: 2 });
    assert.equal(throttle.start("a1", "proxy"), 0);
    throttle.succeed("a1", "proxy");
    assert.equal(throttle.start("a2", "proxy"), 0);
    assert.equal(throttle.start("a3", "proxy"), 0);
    assert.ok(throttle.start("a4", "proxy") > 0, "two failures from the address");
    const open = new LoginThrottle({ now: () => 0, maxPerUser: 100, maxPerAddress: 0 });
    for (let i = 0; i < 50; i++) assert.equal(open.start(`n${i}`, "proxy"), 0);
  });

  it("forgets the oldest names beyond its bound", () => {
    const throttle = new LoginThrottle({ now: () => 0, maxPerUser: 1, maxKeys: 4 });
    throttle.start("first", "x");
    for (let i = 0; i < 5; i++) throttle.start(`u${i}`, `a${i}`);
    assert.equal(throttle.start("first", "fresh"), 0);
  });
});

describe("parseClients()", () => {
  it("hashes a plain secret and keeps a sha256 one; a client without a secret is public", () => {
    const [a, b, c] = parseClients([
      { client_id: "a", client_secret: "s", grant_types: ["client_credentials"], scopes: ["SignUp"] },
      { client_id: "b", client_secret: `sha256:${"A".repeat(64)}`, grant_types: ["client_credentials"], scopes: [] },
      { client_id: "c", grant_types: ["password"], scopes: ["UserActivity"] },
    ]);
    assert.equal(a!.secretHash, "043a718774c572bd8a25adbeb1bfcd5c0256ae11cecf9f9c3f925d0e52beaf89");
    assert.equal(b!.secretHash, "a".repeat(64));
    assert.equal(c!.secretHash, undefined);
  });

  const bad = [
    { name: "a non-array", value: {} },
    { name: "a missing client_id", value: [{ grant_types: ["password"], scopes: [] }] },
    { name: "a repeated client_id", value: [{ client_id: "a", grant_types: ["password"], scopes: [] }, { client_id: "a", grant_types: ["password"], scopes: [] }] },
    { name: "an unknown grant", value: [{ client_id: "a", grant_types: ["implicit"], scopes: [] }] },
    { name: "an unknown scope", value: [{ client_id: "a", grant_types: ["password"], scopes: ["Admin"] }] },
    { name: "client_credentials without a secret", value: [{ client_id: "a", grant_types: ["client_credentials"], scopes: [] }] },
    { name: "a malformed sha256 secret", value: [{ client_id: "a", client_secret: "sha256:abc", grant_types: ["password"], scopes: [] }] },
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
