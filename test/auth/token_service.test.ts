import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { resolveScope } from "../../lib/auth/token_service.ts";
import { type TokenRequest } from "../../lib/auth/mod.ts";
import { authFixture } from "../_helpers/auth.ts";

function request(params: Record<string, string>, address = "192.0.2.1"): TokenRequest {
  return { params: new Map(Object.entries(params)), basic: undefined, address };
}

async function login(
  fixture: ReturnType<typeof authFixture>,
  username = "alice",
  password = "correct horse",
) {
  return fixture.tokens.token(
    request({ grant_type: "password", client_id: "app", username, password }),
  );
}

describe("TokenService password grant", () => {
  it("issues an access token and a refresh token for the user, with the client's scope", async () => {
    const fixture = authFixture();
    const user = await fixture.addUser("alice", "correct horse");
    const answer = await login(fixture);
    assert.ok(answer.refresh_token !== undefined && answer.refresh_token !== answer.access_token);
    assert.equal(answer.scope, "UserActivity");
    const grant = await fixture.tokens.verifyAccess(answer.access_token);
    assert.deepEqual({ user: grant?.userId, client: grant?.clientId }, {
      user: user.uuid,
      client: "app",
    });
  });

  it("matches user names case-insensitively", async () => {
    const fixture = authFixture();
    await fixture.addUser("Alice", "correct horse");
    assert.ok((await login(fixture, "aLiCe")).access_token.length > 0);
  });

  it("refuses a wrong password and an unknown user alike", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    await assert.rejects(login(fixture, "alice", "wrong"), { code: "ERR_AUTH_INVALID_GRANT" });
    await assert.rejects(login(fixture, "nobody", "wrong"), { code: "ERR_AUTH_INVALID_GRANT" });
  });

  it("throttles repeated wrong passwords, even the right one, until the window passes", async () => {
    const fixture = authFixture({ maxPerUser: 3 });
    await fixture.addUser("alice", "correct horse");
    for (let i = 0; i < 3; i++) {
      await assert.rejects(login(fixture, "alice", "guess"), { code: "ERR_AUTH_INVALID_GRANT" });
    }
    await assert.rejects(
      login(fixture),
      (error: Error & { code?: string; retryAfterMs?: number }) => {
        assert.equal(error.code, "ERR_AUTH_THROTTLED");
        assert.ok((error.retryAfterMs ?? 0) >= 1000);
        return true;
      },
    );
    fixture.advance(15 * 60_000 + 1);
    assert.ok((await login(fixture)).access_token.length > 0);
  });

  it("lets no more parallel attempts through than the limit", async () => {
    const fixture = authFixture({ maxPerUser: 5 });
    await fixture.addUser("alice", "correct horse");
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, () => login(fixture, "alice", "guess")),
    );
    const codes = results.map((r) => (r as PromiseRejectedResult).reason.code as string);
    assert.equal(codes.filter((c) => c === "ERR_AUTH_INVALID_GRANT").length, 5);
    assert.equal(codes.filter((c) => c === "ERR_AUTH_THROTTLED").length, 35);
  });

  it("refuses a name no one can have without counting it against the address", async () => {
    const fixture = authFixture();
    for (let i = 0; i < 30; i++) {
      await assert.rejects(
        fixture.tokens.token(
          request({
            grant_type: "password",
            client_id: "app",
            username: "x".repeat(70_000),
            password: "x",
          }, "198.51.100.9"),
        ),
        { code: "ERR_AUTH_INVALID_GRANT" },
      );
    }
    await fixture.addUser("alice", "correct horse");
    assert.ok(
      (await fixture.tokens.token(
        request({
          grant_type: "password",
          client_id: "app",
          username: "alice",
          password: "correct horse",
        }, "198.51.100.9"),
      )).access_token,
    );
  });

  it("throttles one address trying many user names", async () => {
    const fixture = authFixture({ maxPerUser: 100 });
    for (let i = 0; i < 20; i++) {
      await assert.rejects(
        fixture.tokens.token(
          request(
            { grant_type: "password", client_id: "app", username: `user${i}`, password: "x" },
            "198.51.100.7",
          ),
        ),
      );
    }
    await assert.rejects(
      fixture.tokens.token(
        request(
          { grant_type: "password", client_id: "app", username: "fresh", password: "x" },
          "198.51.100.7",
        ),
      ),
      { code: "ERR_AUTH_THROTTLED" },
    );
  });
});

describe("TokenService throttles that attackers cannot spread out", () => {
  /** The 40 addresses of a botnet, none of which has logged in as anyone. */
  const botnet = Array.from({ length: 40 }, (_, i) => `203.0.113.${i + 1}`);

  it("slows guesses at one user name spread over many addresses: 5 from each of 40 addresses", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const codes: string[] = [];
    for (let round = 0; round < 5; round++) {
      for (const address of botnet) {
        const attempt = fixture.tokens.token(
          request({
            grant_type: "password",
            client_id: "app",
            username: "alice",
            password: `guess${round}`,
          }, address),
        );
        codes.push(await attempt.then(() => "ok", (error: { code: string }) => error.code));
      }
    }
    assert.equal(codes.filter((c) => c === "ok").length, 0);
    assert.equal(
      codes.filter((c) => c === "ERR_AUTH_INVALID_GRANT").length,
      10,
      "LOGIN_MAX_FAILURES_PER_NAME (10) guesses, then waits",
    );
    assert.equal(codes.filter((c) => c === "ERR_AUTH_THROTTLED").length, 190);
  });

  it("makes the name's wait grow, 1 s and twice as long after each further guess", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const guess = (address: string) =>
      fixture.tokens.token(
        request(
          { grant_type: "password", client_id: "app", username: "alice", password: "guess" },
          address,
        ),
      );
    for (const address of botnet.slice(0, 10)) {
      await assert.rejects(guess(address), { code: "ERR_AUTH_INVALID_GRANT" });
    }
    const waits: number[] = [];
    for (const address of botnet.slice(10, 18)) {
      const wait = await guess(address).then(
        () => 0,
        (error: { code: string; retryAfterMs: number }) => {
          assert.equal(error.code, "ERR_AUTH_THROTTLED");
          return error.retryAfterMs / 1000;
        },
      );
      waits.push(wait);
      fixture.advance(wait * 1000);
      await assert.rejects(
        guess(address),
        { code: "ERR_AUTH_INVALID_GRANT" },
        "once the wait has passed, one more guess is heard",
      );
    }
    assert.deepEqual(waits, [1, 2, 4, 8, 16, 32, 64, 128]);
  });

  it("lets the right password in at once from an address the user logged in from, during the attack", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const home = "198.51.100.20";
    await fixture.tokens.token(
      request({
        grant_type: "password",
        client_id: "app",
        username: "alice",
        password: "correct horse",
      }, home),
    );
    for (const address of botnet) {
      await assert.rejects(
        fixture.tokens.token(
          request({
            grant_type: "password",
            client_id: "app",
            username: "alice",
            password: "guess",
          }, address),
        ),
      );
    }
    fixture.advance(24 * 3600_000);
    const answer = await fixture.tokens.token(
      request({
        grant_type: "password",
        client_id: "app",
        username: "alice",
        password: "correct horse",
      }, home),
    );
    assert.ok(answer.access_token.length > 0);
  });

  it("lets the right password in from a new address after the wait it was asked for", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    for (const address of botnet.slice(0, 12)) {
      await assert.rejects(
        fixture.tokens.token(
          request({
            grant_type: "password",
            client_id: "app",
            username: "alice",
            password: "guess",
          }, address),
        ),
      );
    }
    const phone = request({
      grant_type: "password",
      client_id: "app",
      username: "alice",
      password: "correct horse",
    }, "198.51.100.30");
    const wait = await fixture.tokens.token(phone).then(
      () => 0,
      (error: { code: string; retryAfterMs: number }) => {
        assert.equal(error.code, "ERR_AUTH_THROTTLED");
        return error.retryAfterMs / 1000;
      },
    );
    assert.equal(
      wait,
      1,
      "10 failures is the limit: 1 s after the last (the 11th and 12th guesses waited)",
    );
    fixture.advance(wait * 1000);
    assert.ok(
      (await fixture.tokens.token(phone)).access_token.length > 0,
      "no lockout: after the delay the right password works",
    );
  });

  const clientGuess = (secret: string, address: string, basic = false): TokenRequest =>
    basic
      ? {
        params: new Map([["grant_type", "client_credentials"]]),
        basic: { id: "backend", secret },
        address,
      }
      : request(
        { grant_type: "client_credentials", client_id: "backend", client_secret: secret },
        address,
      );

  it("slows guesses at one client's secret from one address: 5, then waits", async () => {
    const fixture = authFixture();
    const codes: string[] = [];
    for (let i = 0; i < 200; i++) {
      codes.push(
        await fixture.tokens.token(clientGuess(`guess${i}`, "203.0.113.200", i % 2 === 0)).then(
          () => "ok",
          (error: { code: string }) => error.code,
        ),
      );
    }
    assert.equal(codes.filter((c) => c.startsWith("ERR_AUTH_INVALID_CLIENT")).length, 5);
    assert.equal(codes.filter((c) => c === "ERR_AUTH_THROTTLED").length, 195);
  });

  it("lets a back end authenticate hundreds of times at once from one address: only a wrong secret is counted", async () => {
    const fixture = authFixture();
    const answers = await Promise.all(
      Array.from(
        { length: 300 },
        (_, i) => fixture.tokens.token(clientGuess("backend-secret", "10.1.2.3", i % 2 === 0)),
      ),
    );
    assert.equal(answers.filter((answer) => answer.access_token.length > 0).length, 300);
    // Guesses from the same address are still slowed after 5.
    const codes = await Promise.all(
      Array.from(
        { length: 20 },
        (_, i) =>
          fixture.tokens.token(clientGuess(`guess${i}`, "10.1.2.3")).then(
            () => "ok",
            (error: { code: string }) => error.code,
          ),
      ),
    );
    assert.equal(codes.filter((code) => code === "ERR_AUTH_THROTTLED").length, 15);
  });

  it("slows guesses at one client's secret spread over many addresses, and not the client at its own address", async () => {
    const fixture = authFixture();
    const backend = "10.1.2.3";
    assert.ok(
      (await fixture.tokens.token(clientGuess("backend-secret", backend))).access_token.length > 0,
    );
    const codes: string[] = [];
    for (let round = 0; round < 5; round++) {
      for (const address of botnet) {
        codes.push(
          await fixture.tokens.token(clientGuess(`guess${round}`, address)).then(
            () => "ok",
            (error: { code: string }) => error.code,
          ),
        );
      }
    }
    assert.equal(codes.filter((c) => c === "ERR_AUTH_INVALID_CLIENT_CREDENTIALS").length, 10);
    assert.equal(codes.filter((c) => c === "ERR_AUTH_THROTTLED").length, 190);
    for (let i = 0; i < 3; i++) {
      assert.ok(
        (await fixture.tokens.token(clientGuess("backend-secret", backend))).access_token.length >
          0,
      );
    }
    await assert.rejects(fixture.tokens.token(clientGuess("backend-secret", "198.51.100.99")), {
      code: "ERR_AUTH_THROTTLED",
    }, "a new address waits like any other");
  });
});

describe("TokenService refresh_token grant", () => {
  it("rotates: the new refresh token works, the old one is spent", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const first = await login(fixture);
    const second = await fixture.tokens.token(
      request({
        grant_type: "refresh_token",
        client_id: "app",
        refresh_token: first.refresh_token!,
      }),
    );
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.ok((await fixture.tokens.verifyAccess(second.access_token)) !== undefined);
  });

  it("on reuse of a rotated token after the reuse interval fails with invalid_grant and revokes the whole family, newest included", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const first = await login(fixture);
    const refresh = (token: string) =>
      fixture.tokens.token(
        request({ grant_type: "refresh_token", client_id: "app", refresh_token: token }),
      );
    const second = await refresh(first.refresh_token!);
    fixture.advance(30_001);
    await assert.rejects(refresh(first.refresh_token!), { code: "ERR_AUTH_INVALID_GRANT" });
    await assert.rejects(refresh(second.refresh_token!), { code: "ERR_AUTH_INVALID_GRANT" });
    assert.equal(await fixture.tokens.verifyAccess(second.access_token), undefined);
  });

  it("within the reuse interval answers a retried refresh with a new pair of the same login, and every pair works", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const first = await login(fixture);
    const refresh = (token: string) =>
      fixture.tokens.token(
        request({ grant_type: "refresh_token", client_id: "app", refresh_token: token }),
      );
    const lost = await refresh(first.refresh_token!);
    fixture.advance(30_000);
    const retried = await refresh(first.refresh_token!);
    assert.notEqual(retried.refresh_token, lost.refresh_token);
    for (const pair of [lost, retried]) {
      assert.ok(
        (await fixture.tokens.verifyAccess(pair.access_token)) !== undefined,
        "the lost answer's token works too",
      );
    }
    const next = await refresh(retried.refresh_token!);
    assert.ok(
      (await fixture.tokens.verifyAccess(next.access_token)) !== undefined,
      "the retried pair rotates as usual",
    );
    // One login: reuse past the interval revokes every pair of it.
    fixture.advance(30_001);
    await assert.rejects(refresh(first.refresh_token!), { code: "ERR_AUTH_INVALID_GRANT" });
    for (const pair of [lost, retried, next]) {
      assert.equal(await fixture.tokens.verifyAccess(pair.access_token), undefined);
    }
  });

  it("gives both of two refreshes racing with the same token a pair of the same login", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const first = await login(fixture);
    const refresh = (token: string) =>
      fixture.tokens.token(
        request({ grant_type: "refresh_token", client_id: "app", refresh_token: token }),
      );
    const pairs = await Promise.all([refresh(first.refresh_token!), refresh(first.refresh_token!)]);
    for (const pair of pairs) {
      assert.ok((await fixture.tokens.verifyAccess(pair.access_token)) !== undefined);
    }
  });

  it("with a reuse interval of 0 lets only one of two refreshes racing with the same token win, and then revokes the family", async () => {
    const fixture = authFixture({ refreshReuseIntervalSeconds: 0 });
    await fixture.addUser("alice", "correct horse");
    const first = await login(fixture);
    const refresh = (token: string) =>
      fixture.tokens.token(
        request({ grant_type: "refresh_token", client_id: "app", refresh_token: token }),
      );
    const results = await Promise.allSettled([
      refresh(first.refresh_token!),
      refresh(first.refresh_token!),
    ]);
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1);
    assert.equal(
      (results.find((r) => r.status === "rejected") as PromiseRejectedResult).reason.code,
      "ERR_AUTH_INVALID_GRANT",
    );
    const winner = (won[0] as PromiseFulfilledResult<Awaited<ReturnType<typeof refresh>>>).value;
    assert.equal(
      await fixture.tokens.verifyAccess(winner.access_token),
      undefined,
      "the race counts as reuse",
    );
  });

  it("leaves other logins of the same user alone when one family is revoked", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const phone = await login(fixture);
    const laptop = await login(fixture);
    const refresh = (token: string) =>
      fixture.tokens.token(
        request({ grant_type: "refresh_token", client_id: "app", refresh_token: token }),
      );
    await refresh(phone.refresh_token!);
    fixture.advance(30_001);
    await assert.rejects(refresh(phone.refresh_token!));
    assert.ok((await refresh(laptop.refresh_token!)).access_token.length > 0);
  });

  it("may narrow the scope but keeps the refresh token's scope; a wider scope is invalid_scope and spends nothing", async () => {
    const fixture = authFixture();
    await fixture.addUser("dave", "correct horse");
    const first = await fixture.tokens.token(
      request({
        grant_type: "password",
        client_id: "odd_client-id.1",
        client_secret: "s3cr3t:with spaces+plus&amp",
        username: "dave",
        password: "correct horse",
        scope: "UserActivity",
      }),
    );
    const auth = { client_id: "odd_client-id.1", client_secret: "s3cr3t:with spaces+plus&amp" };
    await assert.rejects(
      fixture.tokens.token(
        request({
          ...auth,
          grant_type: "refresh_token",
          refresh_token: first.refresh_token!,
          scope: "UserActivity SignUp",
        }),
      ),
      { code: "ERR_AUTH_INVALID_SCOPE" },
    );
    const second = await fixture.tokens.token(
      request({ ...auth, grant_type: "refresh_token", refresh_token: first.refresh_token! }),
    );
    assert.equal(second.scope, "UserActivity");
  });

  it("refuses a refresh token of another client and an expired one", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const first = await login(fixture);
    await assert.rejects(
      fixture.tokens.token(
        request({
          grant_type: "refresh_token",
          client_id: "odd_client-id.1",
          client_secret: "s3cr3t:with spaces+plus&amp",
          refresh_token: first.refresh_token!,
        }),
      ),
      { code: "ERR_AUTH_INVALID_GRANT" },
    );
    fixture.advance(31 * 24 * 3600 * 1000);
    await assert.rejects(
      fixture.tokens.token(
        request({
          grant_type: "refresh_token",
          client_id: "app",
          refresh_token: first.refresh_token!,
        }),
      ),
      { code: "ERR_AUTH_INVALID_GRANT" },
    );
  });
});

describe("TokenService access tokens", () => {
  it("expire after their lifetime", async () => {
    const fixture = authFixture({ accessTtlSeconds: 60 });
    const answer = await fixture.tokens.token(
      request({
        grant_type: "client_credentials",
        client_id: "backend",
        client_secret: "backend-secret",
      }),
    );
    fixture.advance(59_000);
    assert.ok((await fixture.tokens.verifyAccess(answer.access_token)) !== undefined);
    fixture.advance(1_000);
    assert.equal(await fixture.tokens.verifyAccess(answer.access_token), undefined);
  });

  it("are stored only as their SHA-256", async () => {
    const fixture = authFixture();
    const answer = await fixture.tokens.token(
      request({
        grant_type: "client_credentials",
        client_id: "backend",
        client_secret: "backend-secret",
      }),
    );
    assert.equal(await fixture.store.token(answer.access_token), undefined);
    const { tokenHash } = await import("../../lib/auth/tokens.ts");
    assert.equal((await fixture.store.token(tokenHash(answer.access_token)))?.kind, "access");
  });
});

describe("TokenService revoke()", () => {
  it("revokes a refresh token with its family, ignores unknown tokens, and refuses another client's", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const answer = await login(fixture);
    await assert.rejects(
      fixture.tokens.revoke(
        request({
          client_id: "backend",
          client_secret: "backend-secret",
          token: answer.refresh_token!,
        }),
      ),
      { code: "ERR_AUTH_UNAUTHORIZED_CLIENT" },
    );
    assert.ok(
      (await fixture.tokens.verifyAccess(answer.access_token)) !== undefined,
      "another client cannot revoke it",
    );
    await fixture.tokens.revoke(request({ client_id: "app", token: "unknown" }));
    await fixture.tokens.revoke(
      request({ client_id: "app", token: answer.refresh_token!, token_type_hint: "refresh_token" }),
    );
    assert.equal(await fixture.tokens.verifyAccess(answer.access_token), undefined);
    await assert.rejects(
      fixture.tokens.token(
        request({
          grant_type: "refresh_token",
          client_id: "app",
          refresh_token: answer.refresh_token!,
        }),
      ),
      { code: "ERR_AUTH_INVALID_GRANT" },
    );
  });

  it("requires the token parameter", async () => {
    await assert.rejects(authFixture().tokens.revoke(request({ client_id: "app" })), {
      code: "ERR_AUTH_INVALID_REQUEST",
    });
  });
});

describe("TokenService introspect()", () => {
  it("describes another client's token only to a client with the introspect permission", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const answer = await login(fixture);
    const other = await fixture.tokens.introspect(
      request({
        client_id: "backend",
        client_secret: "backend-secret",
        token: answer.access_token,
      }),
    );
    assert.deepEqual(
      other,
      { active: false },
      "no user name for a client the token is not its own",
    );
    const own = await fixture.tokens.token(
      request({
        grant_type: "client_credentials",
        client_id: "backend",
        client_secret: "backend-secret",
      }),
    );
    const mine = await fixture.tokens.introspect(
      request({ client_id: "backend", client_secret: "backend-secret", token: own.access_token }),
    );
    assert.equal(mine.active && mine.client_id, "backend", "its own token it may see");
  });

  it("describes a live token and says only active:false for others", async () => {
    const fixture = authFixture();
    const user = await fixture.addUser("alice", "correct horse");
    const answer = await login(fixture);
    const by = { client_id: "resource", client_secret: "resource-secret" };
    const live = await fixture.tokens.introspect(request({ ...by, token: answer.access_token }));
    assert.deepEqual(
      {
        active: live.active,
        sub: live.active ? live.sub : "",
        scope: live.active ? live.scope : "",
        type: live.active ? live.token_type : "",
      },
      { active: true, sub: user.uuid, scope: "UserActivity", type: "Bearer" },
    );
    assert.deepEqual(await fixture.tokens.introspect(request({ ...by, token: "nope" })), {
      active: false,
    });
  });

  it("is refused to a public client", async () => {
    await assert.rejects(
      authFixture().tokens.introspect(request({ client_id: "app", token: "x" })),
      (error: Error & { code?: string; challenge?: string }) => {
        assert.equal(error.code, "ERR_AUTH_INVALID_CLIENT");
        assert.match(error.challenge ?? "", /^Basic realm=/);
        return true;
      },
    );
  });
});

describe("resolveScope()", () => {
  const cases = [
    {
      name: "grants everything allowed when nothing is asked",
      requested: undefined,
      expected: ["SignUp", "UserActivity"],
    },
    { name: "grants what is asked", requested: "UserActivity", expected: ["UserActivity"] },
    {
      name: "ignores repeated spaces and duplicates",
      requested: " UserActivity  UserActivity ",
      expected: ["UserActivity"],
    },
  ] as const;
  for (const c of cases) {
    it(
      c.name,
      () => assert.deepEqual(resolveScope(c.requested, ["SignUp", "UserActivity"]), c.expected),
    );
  }

  it("refuses a scope that is not allowed, case-sensitively", () => {
    assert.throws(() => resolveScope("useractivity", ["UserActivity"]), {
      code: "ERR_AUTH_INVALID_SCOPE",
    });
  });
});
