// A real OAuth client, oauth4webapi, drives the token and sync service over
// HTTP on loopback: client credentials (Basic and body), sign-up, password
// login, refresh, the sync API, revocation and introspection.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import * as oauth from "oauth4webapi";
import {
  createAuthService,
  LoginThrottle,
  MemoryAuthStore,
  requireUser,
  TokenService,
} from "../../lib/auth/mod.ts";
import { pooledRandom, uuidV4 } from "../../lib/crypto/mod.ts";
import { createNodeListener, mountHandlers } from "../../lib/http/mod.ts";
import {
  createSyncService,
  MemorySyncStore,
  SerialJobs,
  type SyncData,
  type SyncDiff,
  type Ticket,
} from "../../lib/sync/mod.ts";
import { CLIENTS, TEST_COST } from "../_helpers/auth.ts";

const NETWORK = { timeout: 30_000 } as const;
const BASE = "/api/v2/sync/user";

let server: Server;
let origin: string;
let jobs: SerialJobs;

before(async () => {
  const random = pooledRandom();
  const tokens = new TokenService({
    store: new MemoryAuthStore(),
    clients: CLIENTS,
    now: Date.now,
    random,
    throttle: new LoginThrottle({ now: Date.now }),
    passwordCost: TEST_COST,
    // A spent refresh token presented again is reuse at once here; phones.test.ts drives the retry interval.
    refreshReuseIntervalSeconds: 0,
  });
  const contexts = new MemorySyncStore({ now: Date.now, uuid: () => uuidV4(random) });
  const auth = createAuthService(tokens, {
    onUserCreated: async (user) => {
      await contexts.createContext({
        uuid: user.uuid,
        username: user.username,
        notifyLanguage: user.notifyLanguage,
      });
    },
  });
  jobs = new SerialJobs();
  const sync = createSyncService(contexts, {
    authorize: (request) => requireUser(request, tokens, { scope: "UserActivity" }),
    jobs,
    queueAboveObjects: 3,
  });
  server = createServer(createNodeListener(mountHandlers([
    { prefix: "/oauth2", handler: auth },
    { prefix: "/.well-known/oauth-authorization-server", handler: auth },
    { prefix: "/api/v2/sign-up", handler: auth },
    { prefix: BASE, handler: sync },
  ])));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

const insecure = { [oauth.allowInsecureRequests]: true } as const;

async function authorizationServer(): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(origin);
  const response = await oauth.discoveryRequest(issuer, { algorithm: "oauth2", ...insecure });
  return oauth.processDiscoveryResponse(issuer, response);
}

async function signUpToken(as: oauth.AuthorizationServer): Promise<string> {
  const client: oauth.Client = { client_id: "backend" };
  const response = await oauth.clientCredentialsGrantRequest(
    as,
    client,
    oauth.ClientSecretBasic("backend-secret"),
    { scope: "SignUp" },
    insecure,
  );
  return (await oauth.processClientCredentialsResponse(as, client, response)).access_token;
}

async function signUp(
  as: oauth.AuthorizationServer,
  username: string,
  password: string,
): Promise<Response> {
  return oauth.protectedResourceRequest(
    await signUpToken(as),
    "POST",
    new URL("/api/v2/sign-up", origin),
    new Headers({ "content-type": "application/json" }),
    JSON.stringify({ username, password }),
    insecure,
  );
}

async function login(
  as: oauth.AuthorizationServer,
  username: string,
  password: string,
): Promise<oauth.TokenEndpointResponse> {
  const app: oauth.Client = { client_id: "app" };
  const response = await oauth.genericTokenEndpointRequest(as, app, oauth.None(), "password", {
    username,
    password,
    scope: "UserActivity",
  }, insecure);
  return oauth.processGenericTokenEndpointResponse(as, app, response);
}

function sync(
  token: string,
  path: string,
  init: { method?: string; body?: string; headers?: Record<string, string> } = {},
): Promise<Response> {
  return oauth.protectedResourceRequest(
    token,
    init.method ?? "GET",
    new URL(`${BASE}${path}`, origin),
    new Headers(
      init.headers ?? (init.body === undefined ? {} : { "content-type": "application/json" }),
    ),
    init.body ?? null,
    insecure,
  );
}

/** The client turns an RFC 6750 challenge into a WWWAuthenticateChallengeError with its parameters. */
async function assertChallenge(
  request: Promise<Response>,
  status: number,
  parameters: Record<string, string>,
): Promise<void> {
  await assert.rejects(request, (error: unknown) => {
    assert.ok(error instanceof oauth.WWWAuthenticateChallengeError, String(error));
    assert.equal(error.status, status);
    assert.equal(error.cause[0]?.scheme, "bearer");
    assert.equal(error.cause[0]?.parameters["realm"], "tributary");
    for (const [name, value] of Object.entries(parameters)) {
      assert.equal(
        (error.cause[0]?.parameters as Readonly<Record<string, string>> | undefined)?.[name],
        value,
      );
    }
    return true;
  });
}

describe("oauth4webapi against the token and sync service", NETWORK, () => {
  it("discovers the server's RFC 8414 metadata", async () => {
    const as = await authorizationServer();
    assert.equal(as.issuer, origin);
    assert.equal(as.token_endpoint, `${origin}/oauth2/token`);
    assert.deepEqual(as.grant_types_supported, ["client_credentials", "password", "refresh_token"]);
  });

  it("gets a SignUp token by client credentials with ClientSecretBasic and with ClientSecretPost", async () => {
    const as = await authorizationServer();
    for (
      const [id, secret] of [["backend", "backend-secret"], [
        "odd_client-id.1",
        "s3cr3t:with spaces+plus&amp",
      ]] as const
    ) {
      for (const method of [oauth.ClientSecretBasic, oauth.ClientSecretPost]) {
        const client: oauth.Client = { client_id: id };
        const response = await oauth.clientCredentialsGrantRequest(as, client, method(secret), {
          scope: "SignUp",
        }, insecure);
        assert.equal(response.headers.get("cache-control"), "no-store");
        assert.equal(response.headers.get("pragma"), "no-cache");
        const tokens = await oauth.processClientCredentialsResponse(as, client, response);
        assert.equal(tokens.token_type, "bearer");
        assert.equal(tokens.scope, "SignUp");
        assert.equal(tokens.refresh_token, undefined);
        assert.equal(typeof tokens.expires_in, "number");
      }
    }
  });

  it("surfaces a wrong client secret as the Basic challenge of a 401 invalid_client", async () => {
    const as = await authorizationServer();
    const client: oauth.Client = { client_id: "backend" };
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      oauth.ClientSecretBasic("wrong"),
      {},
      insecure,
    );
    await assert.rejects(
      oauth.processClientCredentialsResponse(as, client, response),
      (error: unknown) => {
        assert.ok(error instanceof oauth.WWWAuthenticateChallengeError);
        assert.equal(error.status, 401);
        assert.equal(error.cause[0]?.scheme, "basic");
        return true;
      },
    );
  });

  it("signs up, logs in, syncs, refreshes, introspects and revokes", async () => {
    const as = await authorizationServer();
    const created = await signUp(as, "river.rat", "correct horse battery");
    assert.equal(created.status, 201);
    const user = await created.json() as { uuid: string; username: string };
    assert.equal(user.username, "river.rat");
    assert.equal((await signUp(as, "River.Rat", "another password")).status, 409);

    const first = await login(as, "river.rat", "correct horse battery");
    assert.equal(first.scope, "UserActivity");
    assert.equal(typeof first.refresh_token, "string");

    // Snapshot, patch, ticket, diff.
    const snapshot = await sync(first.access_token, "");
    assert.equal(snapshot.status, 200);
    const data = (await snapshot.json() as { data: SyncData }).data;
    assert.deepEqual(data.objects.me, {
      uuid: user.uuid,
      username: "river.rat",
      notify_language: null,
    });
    const message = {
      uuid: "10000000-0000-4000-8000-000000000001",
      subject: "Gauge 7 offline",
      body: "",
      sent_at: "2026-01-02T03:04:05Z",
    };
    const submitted = await sync(first.access_token, "", {
      method: "POST",
      body: JSON.stringify({ objects: { messages: [message] }, serial: 5 }),
    });
    assert.equal(submitted.status, 202);
    const { ticket } = await submitted.json() as { ticket: Ticket };
    assert.equal(ticket.client_serial, 5);
    await jobs.idle();
    const done = await (await sync(first.access_token, `/ticket/${ticket.uuid}`)).json() as {
      ticket: Ticket;
      data: null;
    };
    assert.equal(done.ticket.status, "done");
    const diff = await sync(first.access_token, `/since/${data.revision}`);
    assert.equal(diff.status, 200);
    const changes = (await diff.json() as { data: SyncDiff }).data;
    assert.deepEqual(changes.objects.messages.map((m) => m["subject"]), ["Gauge 7 offline"]);
    const cached = await sync(first.access_token, `/since/${data.revision}`, {
      headers: { "if-none-match": diff.headers.get("etag")! },
    });
    assert.equal(cached.status, 304);
    const current = await sync(first.access_token, `/since/${changes.revision}`);
    assert.equal(current.status, 204);

    // Refresh: a new pair; the old refresh token is spent.
    const app: oauth.Client = { client_id: "app" };
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      app,
      await oauth.refreshTokenGrantRequest(as, app, oauth.None(), first.refresh_token!, insecure),
    );
    assert.notEqual(refreshed.access_token, first.access_token);
    assert.notEqual(refreshed.refresh_token, first.refresh_token);
    assert.equal(refreshed.scope, "UserActivity");
    assert.equal((await sync(refreshed.access_token, "")).status, 200);

    // Introspection by a confidential client with the introspect permission (a resource server).
    const resource: oauth.Client = { client_id: "resource" };
    const introspect = async (token: string) =>
      oauth.processIntrospectionResponse(
        as,
        resource,
        await oauth.introspectionRequest(
          as,
          resource,
          oauth.ClientSecretPost("resource-secret"),
          token,
          insecure,
        ),
      );
    const active = await introspect(refreshed.access_token);
    assert.equal(active.active, true);
    assert.equal(active.client_id, "app");
    assert.equal(active.sub, user.uuid);
    assert.equal(active.username, "river.rat");
    assert.equal(
      (await introspect(first.refresh_token!)).active,
      false,
      "a rotated refresh token is inactive",
    );

    // Revocation of the refresh token ends the whole login.
    const revoked = await oauth.revocationRequest(
      as,
      app,
      oauth.None(),
      refreshed.refresh_token!,
      insecure,
    );
    await oauth.processRevocationResponse(revoked);
    assert.equal((await introspect(refreshed.access_token)).active, false);
    await assertChallenge(sync(refreshed.access_token, ""), 401, { error: "invalid_token" });
  });

  it("refuses a reused refresh token with invalid_grant and revokes its family", async () => {
    const as = await authorizationServer();
    assert.equal((await signUp(as, "reuser", "a long password")).status, 201);
    const first = await login(as, "reuser", "a long password");
    const app: oauth.Client = { client_id: "app" };
    const refresh = async (token: string) =>
      oauth.processRefreshTokenResponse(
        as,
        app,
        await oauth.refreshTokenGrantRequest(as, app, oauth.None(), token, insecure),
      );
    const second = await refresh(first.refresh_token!);
    await assert.rejects(refresh(first.refresh_token!), (error: unknown) => {
      assert.ok(error instanceof oauth.ResponseBodyError);
      assert.equal(error.error, "invalid_grant");
      return true;
    });
    await assert.rejects(
      refresh(second.refresh_token!),
      (error: unknown) =>
        error instanceof oauth.ResponseBodyError && error.error === "invalid_grant",
    );
    await assertChallenge(sync(second.access_token, ""), 401, { error: "invalid_token" });
  });

  it("answers a SignUp token on the sync API with 403 insufficient_scope naming UserActivity", async () => {
    const as = await authorizationServer();
    await assertChallenge(sync(await signUpToken(as), ""), 403, {
      error: "insufficient_scope",
      scope: "UserActivity",
    });
  });
});
