// The client's side of HTTP: requests retried with backoff (full jitter,
// `Retry-After`, the platform's online state), the token endpoint (login,
// refresh with rotation), and requests that carry the bearer token and
// refresh it when it expires or is refused.
import { type BackoffOptions, nextDelay, parseRetryAfter } from "./backoff.ts";
import { SyncClientError } from "./errors.ts";
import type { Session } from "./_state.ts";
import type { OnlineSource } from "./types.ts";

/** What a {@linkcode Connection} needs. */
export interface ConnectionOptions {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly clientSecret: string | undefined;
  readonly scope: string;
  readonly fetch: (input: string, init?: RequestInit) => Promise<Response>;
  readonly now: () => number;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A uniform number in [0, 1). */
  readonly draw: () => number;
  readonly backoff: BackoffOptions;
  readonly online: OnlineSource;
  /** How long the server accepts a rotated refresh token again, in milliseconds. */
  readonly refreshReuseInterval: number;
  /** Told when requests fail for want of a network, and when one succeeds again. */
  readonly onReachable: (reachable: boolean, error?: Error) => void;
  readonly session: () => Session | undefined;
  /** Keeps a new session (undefined: the login is gone) durably. */
  readonly setSession: (session: Session | undefined) => Promise<void>;
  /** Called when the login is gone; it may log in again. */
  readonly loginRequired: () => Promise<void>;
}

/** Statuses that say "try again later". */
const TRANSIENT = new Set([408, 425, 429, 500, 502, 503, 504]);
/** An access token is refreshed this long before it expires. */
const EXPIRY_MARGIN = 30_000;

/** A token endpoint's success. */
interface TokenAnswer {
  readonly access_token: string;
  readonly expires_in?: number;
  readonly refresh_token?: string;
}

export function aborted(): SyncClientError {
  return new SyncClientError("ERR_SYNC_CLIENT_ABORTED", "Cannot go on: the operation was aborted");
}

function loginRequired(why: string): SyncClientError {
  return new SyncClientError("ERR_SYNC_CLIENT_LOGIN_REQUIRED", `Cannot sync: ${why}; log in`);
}

/** HTTP for a sync client. */
export class Connection {
  readonly #options: ConnectionOptions;
  #refreshing: Promise<void> | undefined;

  constructor(options: ConnectionOptions) {
    this.#options = options;
  }

  /**
   * Sends a request again and again while it fails for a passing reason (no
   * network, 408, 429, 5xx), waiting by the backoff or `Retry-After`, and
   * while the platform is offline.
   * @returns the first answer that is not a passing failure
   */
  async retrying(
    send: () => Promise<Response>,
    signal: AbortSignal,
    maxDelay?: number,
  ): Promise<Response> {
    const { backoff, online, sleep, draw, now } = this.#options;
    const schedule = maxDelay === undefined
      ? backoff
      : { ...backoff, maxDelay: Math.min(maxDelay, backoff.maxDelay ?? 60_000) };
    for (let attempt = 0;; attempt++) {
      if (signal.aborted) throw aborted();
      if (!online.isOnline()) {
        this.#options.onReachable(false);
        await this.#untilOnline(signal, nextDelay(attempt, draw(), schedule));
        continue;
      }
      let response: Response | undefined;
      let failure: Error | undefined;
      try {
        response = await send();
      } catch (error) {
        if (signal.aborted) throw aborted();
        failure = error instanceof Error ? error : new Error(String(error));
      }
      if (response !== undefined && !TRANSIENT.has(response.status)) {
        this.#options.onReachable(true);
        return response;
      }
      const retryAfter = response === undefined
        ? undefined
        : parseRetryAfter(response.headers.get("retry-after"), now());
      await response?.body?.cancel().catch(() => {});
      this.#options.onReachable(
        false,
        failure ?? new SyncClientError(
          "ERR_SYNC_CLIENT_RESPONSE",
          `Cannot reach the server for now: it answered ${response?.status}`,
          response === undefined ? {} : { status: response.status },
        ),
      );
      await sleep(nextDelay(attempt, draw(), schedule, retryAfter), signal);
    }
  }

  /** Waits for the platform's `online` event, at most `ms`. */
  async #untilOnline(signal: AbortSignal, ms: number): Promise<void> {
    const stop = new AbortController();
    const onAbort = (): void => stop.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    const unsubscribe = this.#options.online.subscribe((online) => {
      if (online) stop.abort();
    });
    try {
      await this.#options.sleep(ms, stop.signal);
    } finally {
      unsubscribe();
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** A request to the token endpoint with the client's credentials. */
  #tokenRequest(params: Record<string, string>, signal: AbortSignal): Promise<Response> {
    const { baseUrl, clientId, clientSecret } = this.#options;
    const form = new URLSearchParams({ ...params, client_id: clientId });
    if (clientSecret !== undefined) form.set("client_secret", clientSecret);
    return this.#options.fetch(`${baseUrl}/oauth2/token`, {
      method: "POST",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
      },
      body: form.toString(),
      signal,
    });
  }

  /** The session a token answer gives. */
  async #sessionOf(response: Response, username: string): Promise<Session> {
    const body = await readJson(response);
    if (
      typeof body !== "object" || body === null || !("access_token" in body) ||
      typeof body.access_token !== "string"
    ) {
      throw new SyncClientError(
        "ERR_SYNC_CLIENT_RESPONSE",
        "Cannot read the token answer: it has no access_token",
        { status: response.status },
      );
    }
    const answer: TokenAnswer = body as TokenAnswer;
    return {
      username,
      accessToken: answer.access_token,
      accessExpiresAt: this.#options.now() + (answer.expires_in ?? 3600) * 1000,
      refreshToken: typeof answer.refresh_token === "string" ? answer.refresh_token : undefined,
    };
  }

  /**
   * Logs in with the password grant.
   * @returns the session (not yet kept)
   * @throws {SyncClientError} `ERR_SYNC_CLIENT_LOGIN_FAILED` when refused
   */
  async login(username: string, password: string, signal: AbortSignal): Promise<Session> {
    const response = await this.retrying(
      () =>
        this.#tokenRequest(
          { grant_type: "password", username, password, scope: this.#options.scope },
          signal,
        ),
      signal,
    );
    if (response.status !== 200) {
      const error = await oauthError(response);
      throw new SyncClientError(
        "ERR_SYNC_CLIENT_LOGIN_FAILED",
        `Cannot log in as ${
          JSON.stringify(username)
        }: the server answered ${response.status} ${error}`,
        { status: response.status },
      );
    }
    return this.#sessionOf(response, username);
  }

  /**
   * Exchanges the refresh token for a new pair, once however many ask at a
   * time. The rotated token is kept before it is used. An answer lost on
   * the way is asked for again with the same refresh token, soon enough for
   * the server's reuse interval to take it as the retry it is.
   * @throws {SyncClientError} `ERR_SYNC_CLIENT_LOGIN_REQUIRED` when the login is gone
   */
  refresh(signal: AbortSignal): Promise<void> {
    this.#refreshing ??= this.#refresh(signal).finally(() => (this.#refreshing = undefined));
    return this.#refreshing;
  }

  async #refresh(signal: AbortSignal): Promise<void> {
    const session = this.#options.session();
    if (session?.refreshToken === undefined) throw loginRequired("there is no login to refresh");
    const token = session.refreshToken;
    const response = await this.retrying(
      () => this.#tokenRequest({ grant_type: "refresh_token", refresh_token: token }, signal),
      signal,
      this.#options.refreshReuseInterval / 4,
    );
    if (response.status === 200) {
      await this.#options.setSession(await this.#sessionOf(response, session.username));
      return;
    }
    const error = await oauthError(response);
    // The login was revoked or expired: forget it, so that nothing presents its tokens again.
    if (this.#options.session()?.refreshToken === token) await this.#options.setSession(undefined);
    throw loginRequired(`the server refused the refresh token (${response.status} ${error})`);
  }

  /**
   * A request of a path under the base URL with the bearer token, refreshed
   * first when it is about to expire, and once more when the server refuses it.
   * When the login is gone, `loginRequired` is asked to log in again first.
   * @returns the answer (after retries of passing failures)
   * @throws {SyncClientError} `ERR_SYNC_CLIENT_LOGIN_REQUIRED` when there is no login
   */
  async authorized(path: string, init: RequestInit, signal: AbortSignal): Promise<Response> {
    for (let refreshed = false;;) {
      let session = this.#options.session();
      if (session === undefined) {
        await this.#options.loginRequired();
        session = this.#options.session();
        if (session === undefined) throw loginRequired("there is no login");
      }
      if (
        session.refreshToken !== undefined &&
        this.#options.now() >= session.accessExpiresAt - EXPIRY_MARGIN && !refreshed
      ) {
        await this.#refreshOrAsk(signal);
        refreshed = true;
        continue;
      }
      const access = session.accessToken;
      const headers = new Headers(init.headers);
      headers.set("authorization", `Bearer ${access}`);
      const response = await this.retrying(
        () => this.#options.fetch(`${this.#options.baseUrl}${path}`, { ...init, headers, signal }),
        signal,
      );
      if (response.status !== 401) return response;
      await response.body?.cancel().catch(() => {});
      if (refreshed) throw loginRequired("the server refuses the refreshed token");
      // Another request may have refreshed the pair meanwhile: then that one is tried.
      if (this.#options.session()?.accessToken === access) await this.#refreshOrAsk(signal);
      refreshed = true;
    }
  }

  /** Refreshes; when the login is gone, lets `loginRequired` log in again. */
  async #refreshOrAsk(signal: AbortSignal): Promise<void> {
    try {
      await this.refresh(signal);
    } catch (error) {
      if (!(error instanceof SyncClientError && error.code === "ERR_SYNC_CLIENT_LOGIN_REQUIRED")) {
        throw error;
      }
      await this.#options.loginRequired();
      if (this.#options.session() === undefined) throw error;
    }
  }

  /** Revokes a refresh token at the server, once; failures are ignored (the session is forgotten anyway). */
  async revoke(token: string, signal: AbortSignal): Promise<void> {
    const { baseUrl, clientId, clientSecret } = this.#options;
    const form = new URLSearchParams({
      token,
      token_type_hint: "refresh_token",
      client_id: clientId,
    });
    if (clientSecret !== undefined) form.set("client_secret", clientSecret);
    try {
      const response = await this.#options.fetch(`${baseUrl}/oauth2/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form.toString(),
        signal,
      });
      await response.body?.cancel().catch(() => {});
    } catch {
      // Offline: the token expires by itself.
    }
  }
}

/** The JSON body of an answer; undefined when it has none or it is not JSON. */
export async function readJson(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The `error` of an OAuth error answer, for messages. */
async function oauthError(response: Response): Promise<string> {
  const body = await readJson(response);
  return typeof body === "object" && body !== null && "error" in body &&
      typeof body.error === "string"
    ? body.error
    : "";
}
