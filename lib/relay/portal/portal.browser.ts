// The relay portal: a tenant's endpoints (state, success rate, secret
// rotation) and message log (filters, attempts, replay), read from the
// relay's own API with the key the user pastes. The key stays in session
// storage and goes only to this origin. The DOM is built from text
// (textContent, never markup), as the page's Trusted Types policy demands.
// It asks through the pages' shared API client, served beside it.

import { ApiError, createApiClient } from "../../web/browser/api_client.browser.ts";

/** The API lives beside the page: `<base>/portal` asks `<base>/...`. */
const API = location.pathname.replace(/\/portal\/?$/, "");
const KEY_ITEM = "tributary.relay.key";
/** How long a replayed message is watched for its new attempt, and how often it is asked. */
const WATCH_MS = 60_000;
const WATCH_EVERY_MS = 1000;

interface Endpoint {
  readonly id: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly enabled: boolean;
  readonly disabled_reason: string | null;
}

interface EndpointStats {
  readonly endpoint_id: string;
  readonly attempts: number;
  readonly successes: number;
  readonly success_rate: number | null;
}

interface Attempt {
  readonly at: string;
  readonly outcome: string;
  readonly status: number | null;
  readonly latency_ms: number;
  readonly error: string | null;
}

interface Delivery {
  readonly id: string;
  readonly endpoint_id: string;
  readonly state: "ready" | "delayed" | "leased" | "delivered" | "dead";
  readonly reason?: string;
  readonly next_attempt_at: string | null;
  readonly attempts: readonly Attempt[];
}

interface Message {
  readonly id: string;
  readonly event: string;
  readonly created_at: string;
  readonly deliveries: readonly Delivery[];
}

function element<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`The page has no #${id}`);
  return found as T;
}

const keyForm = element<HTMLFormElement>("key-form");
const keyInput = element<HTMLInputElement>("key");
const forgetButton = element<HTMLButtonElement>("forget");
const keyEntry = element<HTMLSpanElement>("key-entry");
const keyGiven = element<HTMLSpanElement>("key-given");
const statusLine = element<HTMLParagraphElement>("status");
const main = element<HTMLElement>("main");
const endpointRows = element<HTMLTableElement>("endpoints").tBodies[0]!;
const statsNote = element<HTMLParagraphElement>("stats-note");
const secretPanel = element<HTMLDivElement>("secret");
const filters = element<HTMLFormElement>("filters");
const endpointFilter = filters.elements.namedItem("endpoint") as HTMLSelectElement;
const messageList = element<HTMLOListElement>("messages");
const emptyNote = element<HTMLParagraphElement>("log-empty");
const moreButton = element<HTMLButtonElement>("more");

let key = sessionStorage.getItem(KEY_ITEM) ?? "";
let nextCursor: string | null = null;
/** Messages watched after a replay, by id: the timer that asks again. */
const watched = new Map<string, number>();

/**
 * Builds an element with attributes and children (text or elements).
 * @param tag the tag name
 * @param attributes attribute values; `false` leaves one out
 */
function h(
  tag: string,
  attributes: Readonly<Record<string, string | boolean>> = {},
  ...children: (Node | string)[]
): HTMLElement {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === false) continue;
    node.setAttribute(name, value === true ? "" : value);
  }
  node.append(...children);
  return node;
}

function say(text: string, kind: "info" | "error" = "info"): void {
  statusLine.textContent = text;
  statusLine.className = kind;
}

/** The relay's API, asked with the tenant's key (a 429 or 503 waited out as Retry-After says). */
const client = createApiClient({
  credentials: () => ({ authorization: `Bearer ${key}` }),
  onRetry: (delay, status) =>
    say(
      `Waiting ${delay / 1000} s: ${status === 429 ? "the API's rate limit" : "the API is busy"}…`,
    ),
});

/** Asks the API beside the page with the key; a 401 forgets the key and asks for it again. */
async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  try {
    return await client.request<T>(`${API}${path}`, init);
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) lock();
    throw error;
  }
}

function failed(error: unknown): void {
  say(error instanceof Error ? error.message : String(error), "error");
}

function time(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

/** The ISO time of a datetime-local value (the browser's zone), or "" for none. */
function isoOf(local: string): string {
  if (local === "") return "";
  const date = new Date(local);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}

function lock(): void {
  key = "";
  sessionStorage.removeItem(KEY_ITEM);
  main.hidden = true;
  showKeyEntry(true);
  for (const timer of watched.values()) clearTimeout(timer);
  watched.clear();
  keyInput.value = "";
  keyInput.focus();
}

async function open(): Promise<void> {
  say("Loading…");
  try {
    await Promise.all([loadEndpoints(), loadMessages(false)]);
  } catch (error) {
    failed(error);
    return;
  }
  main.hidden = false;
  showKeyEntry(false);
  say("");
}

/** The key's field while there is no key; once the portal is open, a note and the button that forgets it. */
function showKeyEntry(shown: boolean): void {
  keyEntry.hidden = !shown;
  keyGiven.hidden = shown;
  forgetButton.hidden = shown;
}

// Endpoints

async function loadEndpoints(): Promise<void> {
  const [endpoints, stats] = await Promise.all([
    api<{ data: Endpoint[] }>("/endpoints"),
    api<{ since: string; data: EndpointStats[] }>("/stats"),
  ]);
  const byId = new Map(stats.data.map((entry) => [entry.endpoint_id, entry] as const));
  statsNote.textContent = `Success rates count the delivery attempts since ${time(stats.since)}.`;
  endpointRows.replaceChildren(
    ...endpoints.data.map((endpoint) => endpointRow(endpoint, byId.get(endpoint.id))),
  );
  const chosen = endpointFilter.value;
  endpointFilter.replaceChildren(
    h("option", { value: "" }, "any"),
    ...endpoints.data.map((endpoint) => h("option", { value: endpoint.id }, endpoint.id)),
  );
  endpointFilter.value = endpoints.data.some((endpoint) => endpoint.id === chosen) ? chosen : "";
}

function endpointRow(endpoint: Endpoint, stats: EndpointStats | undefined): HTMLElement {
  const state = endpoint.enabled
    ? h("span", { class: "badge ok" }, "enabled")
    : h("span", { class: "badge bad", title: endpoint.disabled_reason ?? "" }, "disabled");
  const reason = endpoint.enabled || endpoint.disabled_reason === null
    ? ""
    : ` (${endpoint.disabled_reason})`;
  const rate = stats === undefined || stats.success_rate === null
    ? "no attempts"
    : `${Math.round(stats.success_rate * 1000) / 10}% of ${stats.attempts}`;
  const rotate = h("button", { type: "button", class: "small" }, "Rotate secret");
  rotate.setAttribute("aria-label", `Rotate the signing secret of ${endpoint.id}`);
  rotate.addEventListener("click", () => confirmRotation(rotate, endpoint.id));
  return h(
    "tr",
    { "data-endpoint": endpoint.id },
    h("th", { scope: "row", "data-label": "Endpoint" }, endpoint.id),
    h("td", { "data-label": "URL", class: "url" }, endpoint.url),
    h("td", { "data-label": "State" }, state, reason),
    h("td", { "data-label": "Success", class: "rate" }, rate),
    h("td", { "data-label": "Secret" }, rotate),
  );
}

/** Asks once more before rotating: the button becomes a confirmation beside a cancel. */
function confirmRotation(button: HTMLElement, endpointId: string): void {
  const cell = button.parentElement!;
  const yes = h(
    "button",
    { type: "button", class: "small danger" },
    `Rotate ${endpointId}'s secret`,
  );
  const no = h("button", { type: "button", class: "small" }, "Cancel");
  no.addEventListener("click", () => {
    cell.replaceChildren(button);
    button.focus();
  });
  yes.addEventListener("click", () => void rotate(endpointId, cell, button));
  cell.replaceChildren(yes, " ", no);
  yes.focus();
}

async function rotate(endpointId: string, cell: HTMLElement, button: HTMLElement): Promise<void> {
  try {
    const answer = await api<{ secrets: { secret: string; expires_at: string | null }[] }>(
      `/endpoints/${encodeURIComponent(endpointId)}/rotate-secret`,
      { method: "POST" },
    );
    const [current, ...previous] = answer.secrets;
    const until = previous.map((secret) => secret.expires_at).filter((at): at is string =>
      at !== null
    );
    element("secret-text").textContent = `${endpointId} signs with this secret from now on${
      until.length === 0 ? "" : `; the previous one also signs until ${time(until[0]!)}`
    }. Give it to the receiver.`;
    element("secret-value").textContent = current?.secret ?? "";
    secretPanel.hidden = false;
    secretPanel.focus();
    say(`Rotated the secret of ${endpointId}`);
  } catch (error) {
    failed(error);
  }
  cell.replaceChildren(button);
}

// Messages

function logQuery(cursor: string | null): string {
  const data = new FormData(filters);
  const query = new URLSearchParams();
  for (const name of ["event", "status", "endpoint"]) {
    const value = String(data.get(name) ?? "").trim();
    if (value !== "") query.set(name, value);
  }
  for (const name of ["since", "until"]) {
    const value = isoOf(String(data.get(name) ?? ""));
    if (value !== "") query.set(name, value);
  }
  query.set("limit", "20");
  if (cursor !== null) query.set("cursor", cursor);
  return query.toString();
}

async function loadMessages(append: boolean): Promise<void> {
  const page = await api<{ data: Message[]; next_cursor: string | null }>(
    `/messages?${logQuery(append ? nextCursor : null)}`,
  );
  const items = page.data.map(messageItem);
  if (append) messageList.append(...items);
  else messageList.replaceChildren(...items);
  nextCursor = page.next_cursor;
  moreButton.hidden = nextCursor === null;
  emptyNote.hidden = messageList.childElementCount > 0;
}

/** A message's status in one word: dead when a delivery died, pending while one waits. */
function summary(message: Message): "dead" | "pending" | "delivered" {
  if (message.deliveries.some((delivery) => delivery.state === "dead")) return "dead";
  if (message.deliveries.some((delivery) => delivery.state !== "delivered")) return "pending";
  return "delivered";
}

function messageItem(message: Message): HTMLElement {
  const status = summary(message);
  const tries = message.deliveries.reduce((sum, delivery) => sum + delivery.attempts.length, 0);
  const details = h(
    "details",
    {},
    h(
      "summary",
      {},
      h("span", {
        class: `badge ${status === "delivered" ? "ok" : status === "dead" ? "bad" : "wait"}`,
      }, status),
      " ",
      h("span", { class: "event" }, message.event),
      " ",
      h("time", { datetime: message.created_at }, time(message.created_at)),
      " ",
      h(
        "span",
        { class: "muted" },
        `${message.deliveries.length} endpoint${
          message.deliveries.length === 1 ? "" : "s"
        }, ${tries} attempt${tries === 1 ? "" : "s"}`,
      ),
    ),
    h("p", { class: "muted id" }, `Message ${message.id}`),
    ...message.deliveries.map((delivery) => deliveryBlock(message.id, delivery)),
  );
  return h("li", { "data-message": message.id, "data-status": status }, details);
}

function deliveryBlock(messageId: string, delivery: Delivery): HTMLElement {
  const head = h(
    "p",
    { class: "delivery-head" },
    h("strong", {}, delivery.endpoint_id),
    " ",
    h("span", {
      class: `badge ${
        delivery.state === "delivered" ? "ok" : delivery.state === "dead" ? "bad" : "wait"
      }`,
    }, delivery.state),
  );
  if (delivery.reason !== undefined) head.append(` ${delivery.reason}`);
  if (delivery.next_attempt_at !== null) {
    head.append(` · next attempt ${time(delivery.next_attempt_at)}`);
  }
  if (delivery.state === "dead") {
    const replay = h("button", { type: "button", class: "small" }, "Replay");
    replay.setAttribute("aria-label", `Replay message ${messageId} to ${delivery.endpoint_id}`);
    replay.addEventListener("click", () => void replayOne(messageId, delivery.id, replay));
    head.append(" ", replay);
  }
  const rows = delivery.attempts.map((attempt, index) =>
    h(
      "tr",
      { "data-outcome": attempt.outcome },
      h("td", { "data-label": "#" }, String(index + 1)),
      h("td", { "data-label": "When" }, h("time", { datetime: attempt.at }, time(attempt.at))),
      h(
        "td",
        { "data-label": "Outcome" },
        h(
          "span",
          { class: `badge ${attempt.outcome === "success" ? "ok" : "bad"}` },
          attempt.outcome,
        ),
      ),
      h(
        "td",
        { "data-label": "Status" },
        attempt.status === null ? "none" : String(attempt.status),
      ),
      h("td", { "data-label": "Latency" }, `${attempt.latency_ms} ms`),
      h("td", { "data-label": "Error", class: "error" }, attempt.error ?? ""),
    )
  );
  const attempts = rows.length === 0 ? h("p", { class: "muted" }, "No attempt yet.") : h(
    "div",
    { class: "scroll" },
    h(
      "table",
      { class: "attempts" },
      h("caption", {}, `Attempts to ${delivery.endpoint_id}`),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["#", "When", "Outcome", "Status", "Latency", "Error"].map((name) =>
            h("th", { scope: "col" }, name)
          ),
        ),
      ),
      h("tbody", {}, ...rows),
    ),
  );
  return h(
    "div",
    { class: "delivery", "data-delivery": delivery.id, "data-state": delivery.state },
    head,
    attempts,
  );
}

async function replayOne(messageId: string, jobId: string, button: HTMLElement): Promise<void> {
  button.setAttribute("disabled", "");
  try {
    await api(`/dead-letters/${encodeURIComponent(jobId)}/replay`, { method: "POST" });
    say(`Replayed message ${messageId}; watching for its new attempt`);
    await refreshMessage(messageId, true);
  } catch (error) {
    button.removeAttribute("disabled");
    failed(error);
  }
}

/** Shows a message as it is now; while one of its deliveries waits, asks again (a bounded time). */
async function refreshMessage(
  messageId: string,
  focus: boolean,
  started = Date.now(),
): Promise<void> {
  watched.delete(messageId);
  const message = await api<Message>(`/messages/${encodeURIComponent(messageId)}`);
  const item = messageItem(message);
  const old = messageList.querySelector(`li[data-message="${CSS.escape(messageId)}"]`);
  (item.firstElementChild as HTMLDetailsElement).open = true;
  if (old === null) messageList.prepend(item);
  else old.replaceWith(item);
  if (focus) item.querySelector("summary")?.focus();
  if (summary(message) === "pending" && Date.now() - started < WATCH_MS && key !== "") {
    watched.set(
      messageId,
      setTimeout(
        () => void refreshMessage(messageId, false, started).catch(failed),
        WATCH_EVERY_MS,
      ),
    );
  } else if (summary(message) === "delivered") {
    say(`Message ${messageId} delivered`);
    void loadEndpoints().catch(failed);
  }
}

async function replayAll(): Promise<void> {
  try {
    const { replayed } = await api<{ replayed: number }>("/dead-letters/replay", {
      method: "POST",
    });
    say(
      replayed === 0
        ? "No dead letter to replay"
        : `Replayed ${replayed} dead letter${replayed === 1 ? "" : "s"}`,
    );
    await loadMessages(false);
  } catch (error) {
    failed(error);
  }
}

// Wiring

keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  key = keyInput.value.trim();
  if (key === "") return;
  sessionStorage.setItem(KEY_ITEM, key);
  keyInput.value = "";
  void open().then(() => {
    if (!main.hidden) main.focus();
  });
});
forgetButton.addEventListener("click", () => {
  lock();
  say("The key is forgotten");
});
filters.addEventListener("submit", (event) => {
  event.preventDefault();
  void loadMessages(false).then(() => say(""), failed);
});
filters.addEventListener("reset", () => {
  setTimeout(() => void loadMessages(false).catch(failed));
});
element("refresh").addEventListener("click", () => {
  void Promise.all([loadEndpoints(), loadMessages(false)]).then(() => say("Refreshed"), failed);
});
element("replay-all").addEventListener("click", () => void replayAll());
moreButton.addEventListener("click", () => void loadMessages(true).catch(failed));
element("secret-close").addEventListener("click", () => {
  secretPanel.hidden = true;
  element("secret-value").textContent = "";
});

if (key !== "") void open();
else keyInput.focus();
