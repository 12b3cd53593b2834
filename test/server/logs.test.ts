// The server's log as a collector reads it (not a terminal): every line is
// JSON with level, time and msg; each request has its access line; no
// credential a request carried is ever written.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { listeningUrl, startServer } from "../_helpers/server.ts";

const sha = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;

describe("server.ts logs", () => {
  it("writes JSON lines with level, time and msg, an access line a request with its route and request id, and never a credential", async () => {
    // Credentials of our own, stored hashed, so that the start-up notes do not print them as they do the demo's.
    const apiKey = "logs-test-api-key-5a1d9c";
    const clientSecret = "logs-test-client-secret-77e0";
    const tenantKey = "logs-test-tenant-key-0b3f";
    const password = "correct horse battery staple";
    const dir = mkdtempSync(join(tmpdir(), "tributary-logs-"));
    writeFileSync(
      join(dir, "api_keys.json"),
      JSON.stringify({ api_keys: [{ name: "t", key: sha(apiKey) }] }),
    );
    writeFileSync(
      join(dir, "clients.json"),
      JSON.stringify([
        {
          client_id: "backend",
          client_secret: sha(clientSecret),
          grant_types: ["client_credentials"],
          scopes: ["SignUp"],
        },
        { client_id: "app", grant_types: ["password", "refresh_token"], scopes: ["UserActivity"] },
      ]),
    );
    writeFileSync(
      join(dir, "tenants.json"),
      JSON.stringify({ tenants: [{ id: "t", api_keys: [sha(tenantKey)], endpoints: [] }] }),
    );
    const started = startServer({
      API_KEYS_FILE: join(dir, "api_keys.json"),
      CLIENTS_FILE: join(dir, "clients.json"),
      TENANTS_FILE: join(dir, "tenants.json"),
      PASSWORD_HASH_COST: "1024",
      RATE_LIMIT_PER_SECOND: "0",
    });
    const url = await listeningUrl(started);
    const ids: string[] = [];
    const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
      const response = await fetch(`${url}${path}`, init);
      ids.push(response.headers.get("x-request-id") ?? "");
      return response;
    };
    const form = (fields: Record<string, string>) => ({
      "content-type": "application/x-www-form-urlencoded",
      body: new URLSearchParams(fields).toString(),
    });

    assert.equal(
      (await call("/v1/odata/v4/Locations?$top=1&$filter=Id%20eq%201", {
        headers: { "x-api-key": apiKey },
      })).status,
      200,
    );
    assert.equal(
      (await call("/v1/odata/v4/Locations", { headers: { "x-api-key": "wrong-key-9f" } })).status,
      403,
    );
    const { body: grant, ...grantHeaders } = form({
      grant_type: "client_credentials",
      scope: "SignUp",
    });
    const signUpToken = ((await (await call("/oauth2/token", {
      method: "POST",
      headers: { ...grantHeaders, authorization: `Basic ${btoa(`backend:${clientSecret}`)}` },
      body: grant,
    })).json()) as { access_token: string }).access_token;
    assert.equal(
      (await call("/api/v2/sign-up", {
        method: "POST",
        headers: { authorization: `Bearer ${signUpToken}`, "content-type": "application/json" },
        body: JSON.stringify({ username: "logged", password }),
      })).status,
      201,
    );
    const { body: login, ...loginHeaders } = form({
      grant_type: "password",
      client_id: "app",
      username: "logged",
      password,
      scope: "UserActivity",
    });
    const tokens =
      (await (await call("/oauth2/token", { method: "POST", headers: loginHeaders, body: login }))
        .json()) as { access_token: string; refresh_token: string };
    const { body: bad, ...badHeaders } = form({
      grant_type: "password",
      client_id: "app",
      username: "logged",
      password: "not the password at all",
    });
    assert.equal(
      (await call("/oauth2/token", { method: "POST", headers: badHeaders, body: bad })).status,
      400,
    );
    assert.equal(
      (await call("/api/v2/sync/user", {
        headers: { authorization: `Bearer ${tokens.access_token}` },
      })).status,
      200,
    );
    const { body: renew, ...renewHeaders } = form({
      grant_type: "refresh_token",
      client_id: "app",
      refresh_token: tokens.refresh_token,
    });
    assert.equal(
      (await call("/oauth2/token", { method: "POST", headers: renewHeaders, body: renew })).status,
      200,
    );
    assert.equal(
      (await call("/webhook", {
        method: "POST",
        headers: { authorization: `Bearer ${tenantKey}`, "content-type": "application/json" },
        body: JSON.stringify({ event: "a.b", data: { secretish: "payload-body-7c2e" } }),
      })).status,
      202,
    );
    assert.equal((await call("/nowhere?token=query-secret-31")).status, 404);
    started.child.kill("SIGTERM");
    assert.equal((await once(started.child, "exit"))[0], 0);

    const { out, err } = started.raw();
    const lines = `${out}${err}`.split("\n").filter((line) => line !== "");
    assert.ok(lines.length > 20);
    const records = lines.map((line) => {
      const record = JSON.parse(line) as Record<string, unknown>;
      assert.equal(typeof record["level"], "string", line);
      assert.match(String(record["time"]), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, line);
      assert.equal(typeof record["msg"], "string", line);
      return record;
    });
    for (
      const secret of [
        apiKey,
        "wrong-key-9f",
        clientSecret,
        signUpToken,
        password,
        "not the password at all",
        tokens.access_token,
        tokens.refresh_token,
        tenantKey,
        "payload-body-7c2e",
        "query-secret-31",
      ]
    ) {
      assert.equal(`${out}${err}`.includes(secret), false, `the log holds ${secret.slice(0, 12)}…`);
    }
    const access = records.filter((record) => record["event"] === "request");
    assert.deepEqual(
      access.map((record) => record["requestId"]),
      ids,
      "one access line a request, with the id its answer carried",
    );
    assert.deepEqual(
      access.map((record) => [record["method"], record["route"], record["status"]]),
      [
        ["GET", "/v1/odata/v4/Locations", 200],
        ["GET", "/v1/odata/v4/Locations", 403],
        ["POST", "/oauth2/token", 200],
        ["POST", "/api/v2/sign-up", 201],
        ["POST", "/oauth2/token", 200],
        ["POST", "/oauth2/token", 400],
        ["GET", "/api/v2/sync/user", 200],
        ["POST", "/oauth2/token", 200],
        ["POST", "/webhook", 202],
        ["GET", "other", 404],
      ],
    );
    for (const record of access) {
      assert.equal(typeof record["durationMs"], "number");
      assert.equal(typeof record["bytes"], "number");
      assert.equal(record["client"], "127.0.0.1");
    }
    assert.equal(records.at(-1)!["msg"], "SIGTERM: finishing requests in flight, then exiting");
  });
});
