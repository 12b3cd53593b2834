// The contract every AuthStore implementation passes: in memory, on the
// journal, on PostgreSQL. A durable one also keeps everything over a reopen.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { AuthStore, TokenRecord, UserRecord } from "../../lib/auth/mod.ts";

const USER: UserRecord = {
  uuid: "a11ce000-0000-4000-8000-000000000001",
  username: "Alice",
  passwordHash: "scrypt$…",
  notifyLanguage: null,
  createdAt: 1,
};

function token(hash: string, overrides: Partial<TokenRecord> = {}): TokenRecord {
  return {
    hash,
    kind: "access",
    clientId: "app",
    userId: USER.uuid,
    scope: ["UserActivity"],
    issuedAt: 0,
    expiresAt: 1000,
    familyId: "f1",
    rotatedAt: null,
    ...overrides,
  };
}

/**
 * Runs the AuthStore contract.
 * @param name the implementation's name
 * @param make builds an empty store
 * @param reopen for a durable store: closes it and opens it again from what it keeps, as a restart does
 */
export function authStoreContract(
  name: string,
  make: () => Promise<AuthStore> | AuthStore,
  reopen?: (store: AuthStore) => Promise<AuthStore>,
): void {
  describe(`AuthStore contract: ${name}`, () => {
    it("adds a user once, names compared without case", async () => {
      const store = await make();
      assert.equal(await store.createUser(USER), true);
      assert.equal(
        await store.createUser({
          ...USER,
          uuid: "b0b00000-0000-4000-8000-000000000002",
          username: "ALICE",
        }),
        false,
      );
      assert.deepEqual(await store.userByName("alice"), USER);
      assert.deepEqual(await store.userById(USER.uuid), USER);
      assert.equal(await store.userByName("bob"), undefined);
      assert.equal(await store.userById("b0b00000-0000-4000-8000-000000000002"), undefined);
    });

    it("finds names by case and Unicode form alike", async () => {
      const store = await make();
      const jose = { ...USER, username: "jos\u00e9" };
      assert.equal(await store.createUser(jose), true);
      assert.equal(
        await store.createUser({
          ...jose,
          uuid: "b0b00000-0000-4000-8000-000000000002",
          username: "JOSE\u0301",
        }),
        false,
      );
      assert.deepEqual(await store.userByName("Jose\u0301"), jose);
    });

    it("deletes a user with every token issued for the user, and frees the name", async () => {
      const store = await make();
      await store.createUser(USER);
      await store.putToken(token("mine", { userId: USER.uuid }));
      await store.putToken(
        token("refresh", { userId: USER.uuid, kind: "refresh", familyId: "f1" }),
      );
      await store.putToken(token("client", { userId: null }));
      await store.deleteUser(USER.uuid);
      assert.equal(await store.userById(USER.uuid), undefined);
      assert.equal(await store.userByName("alice"), undefined);
      assert.equal(await store.token("mine"), undefined);
      assert.equal(await store.token("refresh"), undefined);
      assert.ok((await store.token("client")) !== undefined, "other tokens stay");
      assert.equal(
        await store.createUser({ ...USER, uuid: "c0c00000-0000-4000-8000-000000000003" }),
        true,
        "the name is free again",
      );
      await store.deleteUser("d0d00000-0000-4000-8000-000000000004");
      if (reopen !== undefined) {
        const again = await reopen(store);
        assert.equal(await again.token("mine"), undefined, "deleted for good");
        assert.equal(
          (await again.userByName("alice"))?.uuid,
          "c0c00000-0000-4000-8000-000000000003",
        );
      }
    });

    it("stores, finds and deletes tokens by hash", async () => {
      const store = await make();
      await store.putToken(token("h1"));
      assert.deepEqual(await store.token("h1"), token("h1"));
      assert.equal(await store.token("h2"), undefined);
      await store.deleteToken("h1");
      assert.equal(await store.token("h1"), undefined);
    });

    it("gives a token as live only when it is unexpired, not rotated, and its family not revoked", async () => {
      const store = await make();
      await store.putToken(token("ok", { expiresAt: 100 }));
      await store.putToken(token("spent", { kind: "refresh", expiresAt: 100, familyId: "f2" }));
      await store.rotate("spent", 10);
      await store.putToken(token("client", { familyId: null, userId: null, expiresAt: 100 }));
      await store.putToken(token("revoked", { familyId: "f3", expiresAt: 100 }));
      await store.revokeFamily("f3");
      assert.deepEqual(await store.liveToken("ok", 50), token("ok", { expiresAt: 100 }));
      assert.equal(await store.liveToken("ok", 100), undefined, "expired at its expiry time");
      assert.equal(await store.liveToken("spent", 50), undefined);
      assert.ok(await store.liveToken("client", 50));
      assert.equal(await store.liveToken("revoked", 50), undefined);
      assert.equal(await store.liveToken("unknown", 50), undefined);
      // Asked all at once (as concurrent requests do; a store may answer them together), each gets its own answer.
      const together = await Promise.all([
        store.liveToken("ok", 50),
        store.liveToken("ok", 100),
        store.liveToken("spent", 50),
        store.liveToken("client", 50),
        store.liveToken("revoked", 50),
        store.liveToken("unknown", 50),
      ]);
      assert.deepEqual(together.map((found) => found?.hash), [
        "ok",
        undefined,
        undefined,
        "client",
        undefined,
        undefined,
      ]);
    });

    it("rotates a refresh token once: a second rotation reports reuse", async () => {
      const store = await make();
      await store.putToken(token("r1", { kind: "refresh" }));
      assert.equal(await store.rotate("r1", 50), true);
      assert.equal((await store.token("r1"))?.rotatedAt, 50);
      assert.equal(await store.rotate("r1", 60), false);
      assert.equal(await store.rotate("unknown", 60), false);
    });

    it("revokes families and forgets expired tokens and then their revoked families", async () => {
      const store = await make();
      await store.putToken(token("a", { familyId: "f1", expiresAt: 100 }));
      await store.putToken(token("b", { familyId: "f2", expiresAt: 500 }));
      await store.revokeFamily("f1");
      assert.equal(await store.isFamilyRevoked("f1"), true);
      assert.equal(await store.isFamilyRevoked("f2"), false);
      await store.sweep(200);
      assert.equal(await store.token("a"), undefined);
      assert.ok(await store.token("b"));
      assert.equal(
        await store.isFamilyRevoked("f1"),
        false,
        "no token of f1 can be presented any more",
      );
    });

    if (reopen !== undefined) {
      it("keeps users, tokens, rotations and revoked families over a reopen", async () => {
        const store = await make();
        await store.createUser(USER);
        await store.putToken(token("live", { expiresAt: 10_000 }));
        await store.putToken(token("spent", { kind: "refresh", expiresAt: 10_000 }));
        await store.rotate("spent", 70);
        await store.putToken(token("gone"));
        await store.deleteToken("gone");
        await store.revokeFamily("f9");
        const again = await reopen(store);
        assert.deepEqual(await again.userByName("ALICE"), USER);
        assert.equal(
          await again.createUser({ ...USER, uuid: "c0c00000-0000-4000-8000-000000000003" }),
          false,
          "the name stays taken",
        );
        assert.deepEqual(await again.token("live"), token("live", { expiresAt: 10_000 }));
        assert.equal((await again.token("spent"))?.rotatedAt, 70);
        assert.equal(await again.rotate("spent", 80), false, "a rotated token stays rotated");
        assert.equal(await again.token("gone"), undefined);
        assert.equal(await again.isFamilyRevoked("f9"), true);
      });
    }
  });
}
