import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { authFixture, form } from "../_helpers/auth.ts";
import { call } from "../_helpers/water.ts";

async function signUpToken(fixture: ReturnType<typeof authFixture>): Promise<string> {
  const answer = await call(fixture.handler, "/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: form({
      grant_type: "client_credentials",
      client_id: "backend",
      client_secret: "backend-secret",
      scope: "SignUp",
    }),
  });
  return (answer.json() as { access_token: string }).access_token;
}

async function signUp(
  fixture: ReturnType<typeof authFixture>,
  body: unknown,
  token?: string,
  type = "application/json",
) {
  return call(fixture.handler, "/api/v2/sign-up", {
    method: "POST",
    headers: {
      "content-type": type,
      authorization: `Bearer ${token ?? await signUpToken(fixture)}`,
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

describe("POST /api/v2/sign-up", () => {
  it("creates a user: 201 {uuid, username}, and the user can log in", async () => {
    const fixture = authFixture();
    const result = await signUp(fixture, {
      username: "erin",
      password: "correct horse",
      notify_language: "fr",
    });
    assert.equal(result.status, 201);
    const body = result.json() as { uuid: string; username: string };
    assert.match(
      body.uuid,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    assert.equal(body.username, "erin");
    assert.deepEqual(fixture.users.map((u) => u.uuid), [body.uuid], "onUserCreated was called");
    const login = await call(fixture.handler, "/oauth2/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form({
        grant_type: "password",
        client_id: "app",
        username: "erin",
        password: "correct horse",
      }),
    });
    assert.equal(login.status, 200);
  });

  it("answers 409 for a name already taken, case-insensitively", async () => {
    const fixture = authFixture();
    assert.equal(
      (await signUp(fixture, { username: "erin", password: "correct horse" })).status,
      201,
    );
    const again = await signUp(fixture, { username: "ERIN", password: "another one" });
    assert.equal(again.status, 409);
    assert.equal(
      (again.json() as { error: { code: string } }).error.code,
      "ERR_AUTH_USERNAME_TAKEN",
    );
  });

  it("answers 422 with [{message, field}] listing every invalid field", async () => {
    const result = await signUp(authFixture(), {
      username: "x",
      password: "short",
      notify_language: "xx",
      extra: 1,
    });
    assert.equal(result.status, 422);
    const errors = result.json() as { message: string; field: string }[];
    assert.deepEqual(errors.map((e) => e.field).sort(), [
      "extra",
      "notify_language",
      "password",
      "username",
    ]);
    assert.ok(errors.every((e) => e.message.length > 0));
  });

  it("takes e-mail addresses and names in any script, in either Unicode form, and refuses look-alikes by case or form", async () => {
    const fixture = authFixture();
    const login = (username: string, password: string) =>
      call(fixture.handler, "/oauth2/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form({ grant_type: "password", client_id: "app", username, password }),
      });
    const accepted = [
      { username: "erin.o+sync@example.org", shown: "erin.o+sync@example.org" },
      { username: "अनुच्छेद", shown: "अनुच्छेद" }, // Devanagari: vowel signs and virama are combining marks
      { username: "josé", shown: "josé" }, // NFD "josé", stored as NFC
      { username: "ＡＮＮＡ", shown: "ANNA" }, // fullwidth, mapped to its usual width
    ];
    for (const { username, shown } of accepted) {
      const result = await signUp(fixture, { username, password: "correct horse" });
      assert.equal(result.status, 201, `${username}: ${result.text}`);
      assert.equal((result.json() as { username: string }).username, shown);
    }
    for (const lookAlike of ["josé", "JOSÉ", "JosÉ", "anna", "ERIN.O+SYNC@EXAMPLE.ORG"]) {
      assert.equal(
        (await signUp(fixture, { username: lookAlike, password: "correct horse" })).status,
        409,
        lookAlike,
      );
    }
    assert.equal(
      (await login("JOSÉ", "correct horse")).status,
      200,
      "a login by any form and case finds the user",
    );
    for (const bad of ["́abc", "has space", "a/b", "ab", "x".repeat(65)]) {
      const result = await signUp(fixture, { username: bad, password: "correct horse" });
      assert.equal(result.status, 422, bad);
    }
  });

  it("refuses look-alikes and compatibility forms with 422 on username, naming the rule", async () => {
    const fixture = authFixture();
    const cases = [
      { username: "p\u0430ypal", says: "the Latin and Cyrillic scripts" }, // Cyrillic а
      { username: "\u0430dmin", says: "the Cyrillic and Latin scripts" },
      { username: "g\u03bfogle", says: "the Latin and Greek scripts" }, // Greek ο
      { username: "\ud835\udc1admin", says: "compatibility form" }, // mathematical bold a
      { username: "\u01c6ango", says: "compatibility form" }, // the digraph dž
      { username: "ad\u200bmin", says: "invisible" },
    ];
    for (const c of cases) {
      const result = await signUp(fixture, { username: c.username, password: "correct horse" });
      assert.equal(result.status, 422, c.username);
      const [error] = result.json() as { message: string; field: string }[];
      assert.equal(error?.field, "username");
      assert.ok(error?.message.includes(c.says), error?.message);
    }
    assert.equal(
      (await signUp(fixture, { username: "ｐａｙｐａｌ", password: "correct horse" })).status,
      201,
      "fullwidth maps to ASCII",
    );
    assert.equal(
      (await signUp(fixture, { username: "paypal", password: "correct horse" })).status,
      409,
      "and is that name",
    );
  });

  it("still lets users whose names the rules now refuse log in, and keeps their names taken", async () => {
    const fixture = authFixture();
    const login = (username: string) =>
      call(fixture.handler, "/oauth2/token", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form({
          grant_type: "password",
          client_id: "app",
          username,
          password: "correct horse",
        }),
      });
    // Made before the rules, as an earlier version's sign-up accepted them.
    for (const old of ["p\u0430ypal", "\ud835\udc1admin", "\u01c6ango"]) {
      await fixture.addUser(old, "correct horse");
      assert.equal((await login(old)).status, 200, old);
      assert.equal(
        (await signUp(fixture, { username: old, password: "correct horse" })).status,
        422,
        `${old} cannot be made anew`,
      );
    }
    assert.equal(
      (await signUp(fixture, { username: "paypal", password: "correct horse" })).status,
      201,
      "the name it looks like is another",
    );
  });

  it("counts a password in code points, takes any Unicode, and compares it NFKC", async () => {
    const fixture = authFixture();
    assert.equal(
      (await signUp(fixture, { username: "emoji4", password: "🔑🔑🔑🔑" })).status,
      422,
      "4 emoji are 4 characters, not 8",
    );
    assert.equal(
      (await signUp(fixture, { username: "emoji8", password: "🔑".repeat(8) })).status,
      201,
    );
    assert.equal(
      (await signUp(fixture, { username: "long", password: "x".repeat(129) })).status,
      422,
    );
    assert.equal(
      (await signUp(fixture, { username: "wide", password: "ｐａｓｓｗｏｒｄ１" })).status,
      201,
    );
    const login = await call(fixture.handler, "/oauth2/token", {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: form({
        grant_type: "password",
        client_id: "app",
        username: "wide",
        password: "password1",
      }),
    });
    assert.equal(login.status, 200, "the fullwidth password and its NFKC form are one");
  });

  const bad = [
    { name: "malformed JSON", body: '{"username":', type: "application/json", status: 400 },
    { name: "a non-object body", body: "[]", type: "application/json", status: 422 },
    {
      name: "a form body",
      body: "username=x",
      type: "application/x-www-form-urlencoded",
      status: 415,
    },
    {
      name: "a deeply nested body",
      body: `{"username":${"[".repeat(10)}${"]".repeat(10)}}`,
      type: "application/json",
      status: 400,
    },
  ] as const;
  for (const c of bad) {
    it(`answers ${c.status} to ${c.name}`, async () => {
      const result = await signUp(authFixture(), c.body, undefined, c.type);
      assert.equal(result.status, c.status, result.text);
    });
  }

  it("answers 413 to an oversize body", async () => {
    const result = await signUp(authFixture(), { username: "erin", password: "x".repeat(20_000) });
    assert.equal(result.status, 413);
  });
});
