// A plain HTTP client of the token and sync service, as an app drives it:
// the demo clients of data/clients.json, sign-up, logins, refreshes, patches
// and their tickets.
import assert from "node:assert/strict";

/** A token endpoint answer, or an error answer. */
export interface TokenAnswer {
  readonly status: number;
  readonly body: { access_token?: string; refresh_token?: string; error?: string };
}

/** A sync answer: status, the parsed body (when JSON) and headers. */
export interface SyncAnswer {
  readonly status: number;
  readonly body: {
    ticket?: { uuid: string; status: string } | null;
    data?: {
      revision: string;
      serial: number;
      objects: { messages: { uuid: string; subject: string }[] };
    } | null;
  };
  readonly retryAfter: string | null;
}

async function token(
  url: string,
  form: Record<string, string>,
  basic?: string,
): Promise<TokenAnswer> {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (basic !== undefined) headers["authorization"] = `Basic ${btoa(basic)}`;
  const response = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers,
    body: new URLSearchParams(form).toString(),
  });
  return { status: response.status, body: (await response.json()) as TokenAnswer["body"] };
}

/** A SignUp token for the demo back end. */
export async function signUpToken(url: string): Promise<string> {
  const answer = await token(
    url,
    { grant_type: "client_credentials", scope: "SignUp" },
    "demo-backend:demo-backend-secret",
  );
  assert.equal(answer.status, 200, JSON.stringify(answer.body));
  return answer.body.access_token!;
}

/** Signs a user up; gives the answer's status (201, or 409 for a taken name). */
export async function signUp(url: string, username: string, password: string): Promise<number> {
  const response = await fetch(`${url}/api/v2/sign-up`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${await signUpToken(url)}`,
      "content-type": "application/json",
    },
    body: JSON.stringify({ username, password }),
  });
  await response.body?.cancel();
  return response.status;
}

/** A password login of the demo app. */
export function login(url: string, username: string, password: string): Promise<TokenAnswer> {
  return token(url, {
    grant_type: "password",
    client_id: "demo-app",
    username,
    password,
    scope: "UserActivity",
  });
}

/** A refresh of the demo app. */
export function refresh(url: string, refreshToken: string): Promise<TokenAnswer> {
  return token(url, {
    grant_type: "refresh_token",
    client_id: "demo-app",
    refresh_token: refreshToken,
  });
}

/** A GET of the sync API (`""`, `/since/<revision>`, `/ticket/<uuid>`). */
export async function syncGet(url: string, access: string, path = ""): Promise<SyncAnswer> {
  const response = await fetch(`${url}/api/v2/sync/user${path}`, {
    headers: { authorization: `Bearer ${access}` },
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === "" ? {} : (JSON.parse(text) as SyncAnswer["body"]),
    retryAfter: response.headers.get("retry-after"),
  };
}

/** A message of the sync schema. */
export function message(n: number, subject = `Message ${n}`): Record<string, unknown> {
  return {
    uuid: `10000000-0000-4000-8000-${String(n).padStart(12, "0")}`,
    subject,
    body: "",
    read: false,
    sent_at: "2026-11-24T08:00:00Z",
  };
}

/** Posts a patch; gives the answer (202 with a ticket when accepted). */
export async function patch(url: string, access: string, body: unknown): Promise<SyncAnswer> {
  const response = await fetch(`${url}/api/v2/sync/user`, {
    method: "POST",
    headers: { authorization: `Bearer ${access}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text === "" ? {} : (JSON.parse(text) as SyncAnswer["body"]),
    retryAfter: response.headers.get("retry-after"),
  };
}

/** Polls a ticket until it has ended (at most `tries` polls, each a round trip); gives its status. */
export async function ticketEnd(
  url: string,
  access: string,
  uuid: string,
  tries = 5000,
): Promise<string> {
  for (let i = 0; i < tries; i++) {
    const answer = await syncGet(url, access, `/ticket/${uuid}`);
    const status = answer.body.ticket?.status;
    if (answer.status === 200 && status !== "new" && status !== "work") return status ?? "";
  }
  assert.fail(`ticket ${uuid} did not end`);
}
