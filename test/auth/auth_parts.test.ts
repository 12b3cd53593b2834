import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { hashPassword, LoginThrottle, parseClients, TokenMint, tokenHash, verifyPassword } from "../../lib/auth/mod.ts";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import { counterRandom, TEST_COST } from "../_helpers/auth.ts";

describe("hashPassword() and verifyPassword()", () => {
  it("verifies the right password and refuses a wrong one", async () => {
    const hash = await hashPassword("correct horse", { cost: TEST_COST });
    assert.match(hash, /^scrypt\$1024\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    assert.equal(await verifyPassword("correct horse", hash), true);
    assert.equal(await verifyPassword("correct horsE", hash), false);
  });

  it("salts: the same password hashes differently", async () => {
    assert.notEqual(await hashPassword("pw", { cost: TEST_COST }), await hashPassword("pw", { cost: TEST_COST }));
  });

  it("is deterministic for a given salt, and treats Unicode forms alike", async () => {
    const salt = new Uint8Array(16).fill(7);
    assert.equal(await hashPassword("caf\u00e9", { cost: TEST_COST, salt }), await hashPassword("cafe\u0301", { cost: TEST_COST, salt }));
  });

  it("refuses a malformed hash and a bad cost", async () => {
    assert.equal(await verifyPassword("pw", "md5$abc"), false);
    await assert.rejects(hashPassword("pw", { cost: 1000 }), RangeError);
  });
});

describe("LoginThrottle", () => {
  it("counts failures per name in a sliding window and clears them on success", () => {
    let t = 0;
    const throttle = new LoginThrottle({ now: () => t, maxPerUser: 2, windowMs: 1000 });
    throttle.fail("Ann", "a");
    assert.equal(throttle.retryAfter("ann", "b"), 0);
    throttle.fail("ann", "a");
    assert.equal(throttle.retryAfter("ANN", "b"), 1);
    throttle.succeed("ann");
    assert.equal(throttle.retryAfter("ann", "b"), 0);
    throttle.fail("ann", "a");
    throttle.fail("ann", "a");
    t = 1000;
    assert.equal(throttle.retryAfter("ann", "b"), 0);
  });

  it("forgets the oldest names beyond its bound", () => {
    const throttle = new LoginThrottle({ now: () => 0, maxPerUser: 1, maxKeys: 4 });
    throttle.fail("first", "x");
    for (let i = 0; i < 5; i++) throttle.fail(`u${i}`, `a${i}`);
    assert.equal(throttle.retryAfter("first", "fresh"), 0);
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

describe("TokenMint", () => {
  it("cuts 43-character base64url tokens from the random bytes, each character used once", () => {
    const draws: Uint8Array[] = [];
    const random = counterRandom(9);
    const mint = new TokenMint((size) => {
      const bytes = random(size);
      draws.push(bytes);
      return bytes;
    });
    const tokens = Array.from({ length: 200 }, () => mint.next());
    for (const token of tokens) assert.match(token, /^[A-Za-z0-9_-]{43}$/);
    assert.equal(new Set(tokens).size, 200);
    // 200 tokens need four blocks of 64; their text is exactly the tokens in order.
    assert.equal(draws.length, 4);
    const text = draws.map((bytes) => Buffer.from(bytes).toString("base64url")).join("");
    assert.equal(text.slice(0, 200 * 43), tokens.join(""));
  });

  it("stores tokens only by their SHA-256", () => {
    assert.equal(tokenHash("abc"), sha256Hex("abc"));
  });
});
