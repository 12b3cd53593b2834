import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { completeContextFrom, registerInOrder } from "../../lib/accounts/register.ts";
import { MemoryAuthStore, type UserRecord } from "../../lib/auth/mod.ts";
import { MemorySyncStore } from "../../lib/sync/mod.ts";

function user(uuid: string, username: string): UserRecord {
  return { uuid, username, passwordHash: "x", notifyLanguage: null, createdAt: 0 };
}

function stores(): { auth: MemoryAuthStore; sync: MemorySyncStore } {
  let n = 0;
  return {
    auth: new MemoryAuthStore(),
    sync: new MemorySyncStore({
      now: () => 0,
      uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
    }),
  };
}

const ADA = "a0000000-0000-4000-8000-000000000001";
const ADA2 = "a0000000-0000-4000-8000-000000000002";

describe("registerInOrder()", () => {
  it("makes the context, then the user", async () => {
    const { auth, sync } = stores();
    assert.equal(await registerInOrder(auth, sync)(user(ADA, "ada")), true);
    assert.equal((await auth.userById(ADA))?.username, "ada");
    assert.notEqual(await sync.head(ADA), undefined);
  });

  it("makes nothing for a taken name, and deletes the context of one taken meanwhile", async () => {
    const { auth, sync } = stores();
    const register = registerInOrder(auth, sync);
    await register(user(ADA, "ada"));
    assert.equal(await register(user(ADA2, "ADA")), false);
    assert.equal(await sync.head(ADA2), undefined, "no context for a taken name");
    // Two at once: both see the name free, one makes the user; the other's context goes again.
    const { auth: a, sync: s } = stores();
    const racing = registerInOrder(a, s);
    const results = await Promise.all([racing(user(ADA, "grace")), racing(user(ADA2, "Grace"))]);
    assert.deepEqual([...results].sort(), [false, true]);
    // Whoever won has a user and a context; the other, neither.
    assert.equal((await s.head(ADA)) !== undefined, (await a.userById(ADA)) !== undefined);
    assert.equal((await s.head(ADA2)) !== undefined, (await a.userById(ADA2)) !== undefined);
  });

  it("leaves no user without a context when the user's write fails (a crash between the two)", async () => {
    const { auth, sync } = stores();
    const failing = Object.assign(Object.create(auth) as MemoryAuthStore, {
      createUser: () => Promise.reject(new Error("the disk is gone")),
      userByName: (name: string) => auth.userByName(name),
    });
    await assert.rejects(registerInOrder(failing, sync)(user(ADA, "ada")), /the disk is gone/);
    assert.equal(await auth.userById(ADA), undefined, "no user");
    assert.equal(
      await registerInOrder(auth, sync)(user(ADA2, "ada")),
      true,
      "the name is free to sign up again",
    );
  });
});

describe("completeContextFrom()", () => {
  it("makes the context of a user who has none, and none for a user who does not exist", async () => {
    const { auth, sync } = stores();
    await auth.createUser(user(ADA, "ada"));
    const complete = completeContextFrom(auth, sync);
    assert.equal(await complete(ADA), true);
    assert.deepEqual((await sync.snapshot(ADA)).objects["me"], {
      uuid: ADA,
      username: "ada",
      notify_language: null,
    });
    assert.equal(await complete(ADA2), false);
    assert.equal(await sync.head(ADA2), undefined);
  });
});
