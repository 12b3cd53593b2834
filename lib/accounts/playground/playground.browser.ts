// The sync playground: a user signs up or logs in, and two devices of that
// user, each a sync client with its own store (tributary/sync-client,
// compiled for the browser with the page), edit the user's messages side by
// side. Each shows its outbox, its conflicts and the revisions the server
// pushes, and has an Offline switch. The sign-up client's secret, when one
// is pasted, stays in the tab's session storage and goes only to this
// server's token endpoint. The DOM is built from text, as the page's
// Trusted Types policy demands.

import { createDevice, type Device } from "./device.browser.ts";
import { element } from "./dom.browser.ts";

const SECRET_ITEM = "tributary.playground.signup-secret";
const DEVICE_NAMES = ["A", "B"] as const;

const account = element<HTMLFormElement>("account");
const username = element<HTMLInputElement>("username");
const password = element<HTMLInputElement>("password");
const appClient = element<HTMLInputElement>("app-client");
const signupId = element<HTMLInputElement>("signup-id");
const signupSecret = element<HTMLInputElement>("signup-secret");
const signupButton = element<HTMLButtonElement>("signup");
const session = element<HTMLDivElement>("session");
const sessionUser = element<HTMLSpanElement>("session-user");
const logoutButton = element<HTMLButtonElement>("logout");
const statusLine = element<HTMLParagraphElement>("status");
const main = element<HTMLElement>("devices");

let devices: Device[] = [];

signupSecret.value = sessionStorage.getItem(SECRET_ITEM) ?? "";
signupSecret.addEventListener("change", () => {
  if (signupSecret.value === "") sessionStorage.removeItem(SECRET_ITEM);
  else sessionStorage.setItem(SECRET_ITEM, signupSecret.value);
});

function say(text: string, kind: "info" | "error" = "info"): void {
  statusLine.textContent = text;
  statusLine.className = kind;
}

/** A JSON answer's error text: OAuth's `error_description`, the API's `error.message`, or a 422's field messages. */
async function refusal(response: Response): Promise<string> {
  try {
    const body: unknown = await response.json();
    if (Array.isArray(body)) {
      return body.map((item: { message?: unknown }) => String(item.message)).join("; ");
    }
    if (typeof body === "object" && body !== null) {
      const record = body as { error?: unknown; error_description?: unknown };
      if (typeof record.error_description === "string") return record.error_description;
      if (typeof record.error === "object" && record.error !== null && "message" in record.error) {
        return String(record.error.message);
      }
      if (typeof record.error === "string") return record.error;
    }
  } catch {
    // Not JSON: the status says it.
  }
  return `${response.status} ${response.statusText}`.trim();
}

/** Signs the user up: a SignUp token of the back end's client, then the sign-up. */
async function signUp(): Promise<void> {
  if (signupSecret.value === "") {
    throw new Error(
      "Cannot sign up: paste the sign-up client's secret (under “Sign-up client”)",
    );
  }
  sessionStorage.setItem(SECRET_ITEM, signupSecret.value);
  const token = await fetch("/oauth2/token", {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams({
      grant_type: "client_credentials",
      client_id: signupId.value,
      client_secret: signupSecret.value,
      scope: "SignUp",
    }).toString(),
    credentials: "omit",
    cache: "no-store",
  });
  if (!token.ok) throw new Error(`Cannot get a sign-up token: ${await refusal(token)}`);
  const { access_token: accessToken } = (await token.json()) as { access_token: string };
  const signedUp = await fetch("/api/v2/sign-up", {
    method: "POST",
    headers: {
      authorization: `Bearer ${accessToken}`,
      "content-type": "application/json",
      accept: "application/json",
    },
    body: JSON.stringify({ username: username.value, password: password.value }),
    credentials: "omit",
    cache: "no-store",
  });
  if (!signedUp.ok) throw new Error(`Cannot sign up: ${await refusal(signedUp)}`);
}

/** Makes the two devices and logs each in. */
async function start(): Promise<void> {
  await stop();
  const made = DEVICE_NAMES.map((name) =>
    createDevice({ name, baseUrl: location.origin, clientId: appClient.value })
  );
  devices = made;
  try {
    await Promise.all(made.map((device) => device.login(username.value, password.value)));
  } catch (error) {
    await stop();
    throw error;
  }
  main.replaceChildren(...made.map((device) => device.panel));
  main.hidden = false;
  account.hidden = true;
  session.hidden = false;
  sessionUser.textContent = `Logged in as ${username.value} on devices ${
    DEVICE_NAMES.join(" and ")
  }`;
  password.value = "";
  main.focus();
}

/** Closes the devices (their logins revoked) and shows the form again. */
async function stop(): Promise<void> {
  const closing = devices;
  devices = [];
  await Promise.all(closing.map((device) => device.close()));
  main.replaceChildren();
  main.hidden = true;
  account.hidden = false;
  session.hidden = true;
}

/** Runs an action of the form, its buttons off meanwhile, its failure said. */
async function act(what: string, run: () => Promise<void>): Promise<void> {
  const buttons = [...account.querySelectorAll("button")];
  for (const button of buttons) button.disabled = true;
  say(what);
  try {
    await run();
    say("");
  } catch (error) {
    say((error as Error).message, "error");
  } finally {
    for (const button of buttons) button.disabled = false;
  }
}

account.addEventListener("submit", (event) => {
  event.preventDefault();
  void act("Logging in…", start);
});
signupButton.addEventListener("click", () => {
  if (!account.reportValidity()) return;
  void act("Signing up…", async () => {
    await signUp();
    await start();
  });
});
logoutButton.addEventListener("click", () => {
  void act("Logging out…", stop);
});
