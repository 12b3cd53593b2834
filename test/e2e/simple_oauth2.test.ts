// simple-oauth2, a client nobody here wrote, against the app over HTTP on
// loopback: client credentials, the password grant, a refresh and a revoke
// (it parses the revocation answer as JSON, so an empty untyped 200 failed).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ClientCredentials, ResourceOwnerPassword } from "simple-oauth2";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";
import { signUp } from "../_helpers/sync_client.ts";

const PASSWORD = "correct horse battery";
let app: App;
let url: string;

before(async () => {
  app = createApp(readConfig({ SERVICES: "sync", STATE_DIR: "", PASSWORD_HASH_COST: "1024" }), {
    log: { info: () => {}, error: () => {} },
  });
  await app.start();
  url = (await app.listen({ port: 0, host: "127.0.0.1" })).url;
  assert.equal(await signUp(url, "simple", PASSWORD), 201);
});

after(() => app.close());

const auth = () => ({ tokenHost: url, tokenPath: "/oauth2/token", revokePath: "/oauth2/revoke" });

describe("simple-oauth2", () => {
  it("gets a client credentials token", async () => {
    const client = new ClientCredentials({
      client: { id: "demo-backend", secret: "demo-backend-secret" },
      auth: auth(),
    });
    const token = await client.getToken({ scope: "SignUp" });
    assert.equal(token.token["token_type"], "Bearer");
    assert.equal(token.token["scope"], "SignUp");
    assert.equal(token.expired(), false);
  });

  it("logs in with a password, refreshes, and revokes the refresh token, which then no longer refreshes", async () => {
    // A public client: simple-oauth2 sends client_id in the body and no secret.
    const client = new ResourceOwnerPassword({
      client: { id: "demo-app", secret: "" },
      auth: auth(),
      options: { authorizationMethod: "body", bodyFormat: "form" },
    });
    const token = await client.getToken({
      username: "simple",
      password: PASSWORD,
      scope: "UserActivity",
    });
    const sync = await fetch(`${url}/api/v2/sync/user`, {
      headers: { authorization: `Bearer ${String(token.token["access_token"])}` },
    });
    assert.equal(sync.status, 200);
    await sync.body?.cancel();
    const refreshed = await token.refresh();
    assert.notEqual(refreshed.token["refresh_token"], token.token["refresh_token"]);
    await refreshed.revoke("refresh_token");
    await assert.rejects(
      refreshed.refresh(),
      (error: { output?: { statusCode?: number }; data?: { payload?: { error?: string } } }) => {
        assert.equal(error.output?.statusCode, 400);
        assert.equal(error.data?.payload?.error, "invalid_grant");
        return true;
      },
    );
  });
});
