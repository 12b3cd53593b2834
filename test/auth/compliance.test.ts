// RFC compliance of the token endpoint and the bearer guard, one rule per test
// (after @node-oauth/oauth2-server's test/compliance), quoting the rule.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AuthError, requireUser } from "../../lib/auth/mod.ts";
import { authFixture, basic, form } from "../_helpers/auth.ts";
import { makeRequest } from "../_helpers/http.ts";
import { call, type CallResult } from "../_helpers/water.ts";

const FORM = "application/x-www-form-urlencoded";

function post(
  fixture: ReturnType<typeof authFixture>,
  path: string,
  body: string,
  headers: Record<string, string> = {},
) {
  return call(fixture.handler, path, {
    method: "POST",
    headers: { "content-type": FORM, ...headers },
    body,
  });
}

function assertOAuthError(result: CallResult, status: number, error: string): void {
  assert.equal(result.status, status, result.text);
  assert.match(result.headers["content-type"]!, /^application\/json/);
  assert.equal(result.headers["cache-control"], "no-store");
  assert.equal(result.headers["pragma"], "no-cache");
  const body = result.json() as { error: string; error_description?: string };
  assert.equal(body.error, error);
  assert.match(
    body.error_description ?? "",
    /^[\x20-\x21\x23-\x5b\x5d-\x7e]*$/,
    "error_description characters (§5.2)",
  );
}

describe("RFC 6749 §5.2 error responses of the token endpoint", () => {
  it("invalid_request: 'The request is missing a required parameter' (grant_type)", async () => {
    assertOAuthError(
      await post(authFixture(), "/oauth2/token", form({ client_id: "app" })),
      400,
      "invalid_request",
    );
  });

  it("invalid_request: 'includes an unsupported parameter value, repeats a parameter'", async () => {
    const body =
      "grant_type=client_credentials&grant_type=client_credentials&client_id=backend&client_secret=backend-secret";
    assertOAuthError(await post(authFixture(), "/oauth2/token", body), 400, "invalid_request");
  });

  it("invalid_request: 'or is otherwise malformed' (a body that is neither a form nor JSON)", async () => {
    const result = await post(authFixture(), "/oauth2/token", "grant_type=client_credentials", {
      "content-type": "text/plain",
    });
    assertOAuthError(result, 400, "invalid_request");
  });

  it("invalid_request: 'utilizes more than one mechanism for authenticating the client'", async () => {
    const body = form({ grant_type: "client_credentials", client_secret: "backend-secret" });
    assertOAuthError(
      await post(authFixture(), "/oauth2/token", body, {
        authorization: basic("backend", "backend-secret"),
      }),
      400,
      "invalid_request",
    );
  });

  it("invalid_client: 'Client authentication failed (e.g., unknown client...)': 400 without HTTP authentication", async () => {
    const body = form({
      grant_type: "client_credentials",
      client_id: "nobody",
      client_secret: "x",
    });
    assertOAuthError(await post(authFixture(), "/oauth2/token", body), 400, "invalid_client");
  });

  it("invalid_client: 'no client authentication included'", async () => {
    assertOAuthError(
      await post(authFixture(), "/oauth2/token", form({ grant_type: "client_credentials" })),
      400,
      "invalid_client",
    );
  });

  it("invalid_client with Basic: 'MUST respond with 401 and include WWW-Authenticate matching the scheme used'", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      form({ grant_type: "client_credentials" }),
      {
        authorization: basic("backend", "wrong"),
      },
    );
    assertOAuthError(result, 401, "invalid_client");
    assert.match(result.headers["www-authenticate"]!, /^Basic realm="[^"]+"/);
  });

  it("invalid_client with body credentials: 400 and no challenge (a 401 would need one, RFC 9110 §15.5.2)", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      form({ grant_type: "client_credentials", client_id: "backend", client_secret: "wrong" }),
    );
    assertOAuthError(result, 400, "invalid_client");
    assert.equal(result.headers["www-authenticate"], undefined);
  });

  it("every 401 carries WWW-Authenticate", async () => {
    const fixture = authFixture();
    const attempts = [
      post(fixture, "/oauth2/token", form({ grant_type: "client_credentials" }), {
        authorization: basic("nobody", "x"),
      }),
      post(fixture, "/oauth2/introspect", form({ client_id: "app", token: "x" })),
      post(fixture, "/oauth2/revoke", form({ token: "x" }), {
        authorization: basic("backend", "wrong"),
      }),
    ];
    for (const result of await Promise.all(attempts)) {
      assert.equal(result.status, 401, result.text);
      assert.match(result.headers["www-authenticate"] ?? "", /^Basic realm=/);
    }
  });

  it("invalid_grant: 'resource owner credentials ... invalid'", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const result = await post(
      fixture,
      "/oauth2/token",
      form({
        grant_type: "password",
        client_id: "app",
        username: "alice",
        password: "wrong horse",
      }),
    );
    assertOAuthError(result, 400, "invalid_grant");
  });

  it("invalid_grant: 'refresh token is invalid, expired, revoked'", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      form({ grant_type: "refresh_token", client_id: "app", refresh_token: "made-up" }),
    );
    assertOAuthError(result, 400, "invalid_grant");
  });

  it("unauthorized_client: 'not authorized to use this authorization grant type'", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      form({ grant_type: "client_credentials", client_id: "app" }),
    );
    assertOAuthError(result, 400, "unauthorized_client");
  });

  it("unsupported_grant_type: 'not supported by the authorization server'", async () => {
    const body = form({
      grant_type: "authorization_code",
      client_id: "backend",
      client_secret: "backend-secret",
      code: "x",
    });
    assertOAuthError(
      await post(authFixture(), "/oauth2/token", body),
      400,
      "unsupported_grant_type",
    );
  });

  it("invalid_scope: 'The requested scope is invalid, unknown, malformed, or exceeds the scope granted'", async () => {
    const body = form({
      grant_type: "client_credentials",
      client_id: "backend",
      client_secret: "backend-secret",
      scope: "UserActivity",
    });
    assertOAuthError(await post(authFixture(), "/oauth2/token", body), 400, "invalid_scope");
  });
});

describe("RFC 6749 §3.2 and §5.1 rules of the token endpoint", () => {
  it("'MUST ignore unrecognized request parameters'", async () => {
    const body = form({
      grant_type: "client_credentials",
      client_id: "backend",
      client_secret: "backend-secret",
      colour: "blue",
    });
    assert.equal((await post(authFixture(), "/oauth2/token", body)).status, 200);
  });

  it("'Parameters sent without a value MUST be treated as if they were omitted'", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      "grant_type=client_credentials&client_id=backend&client_secret=backend-secret&scope=",
    );
    assert.equal((result.json() as { scope: string }).scope, "SignUp");
  });

  it("'MUST include Cache-Control: no-store ... and Pragma: no-cache' on success", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      form({
        grant_type: "client_credentials",
        client_id: "backend",
        client_secret: "backend-secret",
      }),
    );
    assert.equal(result.status, 200);
    assert.equal(result.headers["cache-control"], "no-store");
    assert.equal(result.headers["pragma"], "no-cache");
    const body = result.json() as Record<string, unknown>;
    assert.equal(body["token_type"], "Bearer");
    assert.equal(body["expires_in"], 3600);
    assert.equal(body["scope"], "SignUp");
    assert.match(String(body["access_token"]), /^[A-Za-z0-9_-]{43}$/, "256 random bits, base64url");
    assert.equal(
      body["refresh_token"],
      undefined,
      "§4.4.3: A refresh token SHOULD NOT be included",
    );
  });

  it("accepts a JSON body with the same meaning, as the original API documents", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      JSON.stringify({
        grant_type: "client_credentials",
        client_id: "backend",
        client_secret: "backend-secret",
        scope: "SignUp",
      }),
      { "content-type": "application/json; charset=UTF-8" },
    );
    assert.equal(result.status, 200);
  });

  it("refuses a JSON body that repeats a parameter, which JSON.parse would hide", async () => {
    const body =
      '{"grant_type":"client_credentials","client_id":"backend","client_id":"backend","client_secret":"backend-secret"}';
    assertOAuthError(
      await post(authFixture(), "/oauth2/token", body, { "content-type": "application/json" }),
      400,
      "invalid_request",
    );
  });

  it("form-url-decodes Basic credentials (Appendix B)", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      form({ grant_type: "client_credentials" }),
      {
        authorization: basic("odd_client-id.1", "s3cr3t:with spaces+plus&amp"),
      },
    );
    assert.equal(result.status, 200, result.text);
  });

  it("answers other methods 405 and unknown paths 404 as OAuth errors with no-store", async () => {
    const wrongMethod = await call(authFixture().handler, "/oauth2/token", {
      method: "GET",
      headers: {},
    });
    assertOAuthError(wrongMethod, 405, "invalid_request");
    assert.match(wrongMethod.headers["allow"]!, /POST/);
    assertOAuthError(
      await call(authFixture().handler, "/oauth2/authorize", { headers: {} }),
      404,
      "invalid_request",
    );
  });

  it("serves the RFC 8414 metadata uncached, its issuer the request's origin", async () => {
    const result = await call(authFixture().handler, "/.well-known/oauth-authorization-server", {
      headers: {},
      origin: "http://127.0.0.1:8123",
    });
    assert.equal(result.status, 200);
    assert.equal(result.headers["cache-control"], "no-store");
    assert.equal((result.json() as { issuer: string }).issuer, "http://127.0.0.1:8123");
  });

  it("refuses a body above 64 KiB with 413 and an OAuth error", async () => {
    const result = await post(
      authFixture(),
      "/oauth2/token",
      `grant_type=client_credentials&pad=${"x".repeat(70_000)}`,
    );
    assertOAuthError(result, 413, "invalid_request");
  });
});

describe("RFC 7009 revocation", () => {
  it("answers 200 with a typed empty JSON object, and refuses another client's token with unauthorized_client (§2.1)", async () => {
    const fixture = authFixture();
    await fixture.addUser("alice", "correct horse");
    const login = await post(
      fixture,
      "/oauth2/token",
      form({
        grant_type: "password",
        client_id: "app",
        username: "alice",
        password: "correct horse",
      }),
    );
    const { refresh_token } = login.json() as { refresh_token: string };
    assertOAuthError(
      await post(fixture, "/oauth2/revoke", form({ token: refresh_token }), {
        authorization: basic("backend", "backend-secret"),
      }),
      400,
      "unauthorized_client",
    );
    const revoked = await post(
      fixture,
      "/oauth2/revoke",
      form({ client_id: "app", token: refresh_token }),
    );
    assert.equal(revoked.status, 200);
    assert.match(revoked.headers["content-type"]!, /^application\/json/);
    assert.deepEqual(revoked.json(), {});
    assert.equal(revoked.headers["cache-control"], "no-store");
  });
});

describe("RFC 6750 §3 challenges of a bearer-protected resource (sign-up)", () => {
  async function signUp(headers: Record<string, string>) {
    return call(authFixture().handler, "/api/v2/sign-up", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify({ username: "bob", password: "long enough" }),
    });
  }

  it("'If the request lacks any authentication information ... SHOULD NOT include an error code'", async () => {
    const result = await signUp({});
    assert.equal(result.status, 401);
    assert.equal(result.headers["www-authenticate"], 'Bearer realm="tributary"');
  });

  it("treats another scheme as no bearer credentials: 401 with a bare challenge (§3.1)", async () => {
    for (const authorization of [basic("backend", "backend-secret"), "Token abc", "Bearerabc"]) {
      const result = await signUp({ authorization });
      assert.equal(result.status, 401, authorization);
      assert.equal(result.headers["www-authenticate"], 'Bearer realm="tributary"');
    }
  });

  it("answers 400 invalid_request for the Bearer scheme without a token", async () => {
    const result = await signUp({ authorization: "Bearer " });
    assert.equal(result.status, 400);
    assert.match(result.headers["www-authenticate"]!, /error="invalid_request"/);
  });

  it("answers 401 invalid_token for an unknown token", async () => {
    const result = await signUp({ authorization: "Bearer not-a-real-token" });
    assert.equal(result.status, 401);
    assert.match(
      result.headers["www-authenticate"]!,
      /^Bearer realm="tributary", error="invalid_token"/,
    );
  });

  it("answers 400 invalid_request for a malformed Authorization header", async () => {
    const result = await signUp({ authorization: "Bearer two words" });
    assert.equal(result.status, 400);
    assert.match(result.headers["www-authenticate"]!, /error="invalid_request"/);
  });

  it("answers 403 insufficient_scope with the scope needed", async () => {
    const fixture = authFixture();
    await fixture.addUser("carol", "correct horse");
    const login = await post(
      fixture,
      "/oauth2/token",
      form({
        grant_type: "password",
        client_id: "app",
        username: "carol",
        password: "correct horse",
      }),
    );
    const token = (login.json() as { access_token: string }).access_token;
    const result = await call(fixture.handler, "/api/v2/sign-up", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: "{}",
    });
    assert.equal(result.status, 403);
    assert.equal(
      result.headers["www-authenticate"],
      'Bearer realm="tributary", error="insufficient_scope", scope="SignUp"',
    );
  });
});

describe("requireUser(): a user's resource", () => {
  it("answers a client's own token 401 invalid_token, even with the right scope", async () => {
    const fixture = authFixture();
    const grant = await post(
      fixture,
      "/oauth2/token",
      form({ grant_type: "client_credentials", scope: "UserActivity" }),
      {
        authorization: basic("odd_client-id.1", "s3cr3t:with spaces+plus&amp"),
      },
    );
    const token = (grant.json() as { access_token: string }).access_token;
    const request = makeRequest({ headers: { authorization: `Bearer ${token}` } });
    await assert.rejects(
      requireUser(request, fixture.tokens, { scope: "UserActivity" }),
      (error: unknown) => {
        assert.ok(error instanceof AuthError);
        assert.equal(error.code, "ERR_AUTH_INVALID_TOKEN");
        assert.match(error.challenge!, /^Bearer realm="tributary", error="invalid_token"/);
        return true;
      },
    );
  });

  it("gives the uuid of the user a password-grant token acts for", async () => {
    const fixture = authFixture();
    const user = await fixture.addUser("erin", "correct horse");
    const login = await post(
      fixture,
      "/oauth2/token",
      form({
        grant_type: "password",
        client_id: "app",
        username: "erin",
        password: "correct horse",
      }),
    );
    const token = (login.json() as { access_token: string }).access_token;
    assert.equal(
      await requireUser(
        makeRequest({ headers: { authorization: `Bearer ${token}` } }),
        fixture.tokens,
        { scope: "UserActivity" },
      ),
      user.uuid,
    );
  });
});
