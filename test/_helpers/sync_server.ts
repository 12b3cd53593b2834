// The token and sync service in process for the sync client's tests: the
// app with SERVICES=sync on 127.0.0.1:0, its clock in the test's hands, the
// demo OAuth clients (data/clients.json), and sign-up as a back end does it.
import assert from "node:assert/strict";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";

export const T0 = Date.UTC(2026, 10, 24, 8);
export const DAY = 86_400_000;
export const PASSWORD = "correct horse battery";

/** The server, with its clock. */
export class SyncServer {
  readonly clock = { time: T0 };
  #app: App | undefined;
  url = "";

  /**
   * Starts the app with SERVICES=sync and these settings over the tests' own
   * (a cheap password hash, one day's retention, no rate limit).
   * @param env settings over those
   * @param stateDir STATE_DIR, unless `env` names it; undefined leaves it to `env` (or the app's default)
   */
  async start(env: Record<string, string> = {}, stateDir: string | undefined = ""): Promise<this> {
    const config = readConfig({
      SERVICES: "sync",
      ...(stateDir === undefined ? {} : { STATE_DIR: stateDir }),
      PASSWORD_HASH_COST: "1024",
      REVISION_RETENTION_DAYS: "1",
      RATE_LIMIT_PER_SECOND: "0",
      RATE_LIMIT_CONCURRENCY: "0",
      ...env,
    });
    this.#app = createApp(config, {
      now: () => this.clock.time,
      log: { info: () => {}, error: () => {} },
    });
    await this.#app.start();
    this.url = (await this.#app.listen({ port: 0, host: "127.0.0.1" })).url;
    return this;
  }

  close(): Promise<void> {
    return this.#app?.close() ?? Promise.resolve();
  }

  /** Signs a user up through the API, as the demo back end. */
  async signUp(username: string, password = PASSWORD): Promise<void> {
    const token = await fetch(`${this.url}/oauth2/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
      },
      body: new URLSearchParams({ grant_type: "client_credentials", scope: "SignUp" }).toString(),
    });
    const { access_token } = (await token.json()) as { access_token: string };
    const response = await fetch(`${this.url}/api/v2/sign-up`, {
      method: "POST",
      headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
      body: JSON.stringify({ username, password }),
    });
    assert.equal(response.status, 201, await response.text());
  }

  /** Logs a user in with the password grant, as the demo app does: its tokens. */
  async login(
    username: string,
    password = PASSWORD,
  ): Promise<{ access_token: string; refresh_token: string }> {
    const token = await fetch(`${this.url}/oauth2/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "password",
        client_id: "demo-app",
        username,
        password,
        scope: "UserActivity",
      }).toString(),
    });
    assert.equal(token.status, 200, "logged in");
    return (await token.json()) as { access_token: string; refresh_token: string };
  }

  /** The user's context as the server has it now (a fresh login, a snapshot). */
  async snapshot(username: string, password = PASSWORD): Promise<{
    serial: number;
    objects: { messages: { uuid: string; subject: string }[] };
  }> {
    const { access_token } = await this.login(username, password);
    const response = await fetch(`${this.url}/api/v2/sync/user`, {
      headers: { authorization: `Bearer ${access_token}` },
    });
    assert.equal(response.status, 200);
    return ((await response.json()) as { data: Awaited<ReturnType<SyncServer["snapshot"]>> }).data;
  }
}

/** A message of the schema, numbered. */
export function message(n: number, subject = `Message ${n}`) {
  return {
    uuid: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    subject,
    body: "",
    sent_at: "2026-11-24T08:00:00Z",
  };
}

/** A sleep that never waits: the tests' clients retry at once. */
export const noSleep = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
