// One device of the playground: a sync client with a store of its own (in
// memory), an Offline switch, the user's messages (list, add, edit, delete),
// and what the client does as it does it: its outbox (the writes its store
// holds until the server has them, and the patch in flight), the conflicts
// its policy decided, and the revisions the server pushed over the stream.
// The switch is what the device's network does: its fetch refuses while it
// is on and cuts the requests in flight (the stream among them), and the
// client is told, as `navigator.onLine` tells it on a real device.

import {
  createSyncClient,
  localWins,
  memoryStorage,
  type Message,
  type OnlineSource,
  serverWins,
  type SyncClient,
  type SyncConflict,
  type SyncStatus,
  type SyncStorage,
} from "../../sync_client/mod.ts";
import { streamChanges } from "./changes.browser.ts";
import { clock, h, short } from "./dom.browser.ts";

/** Options of {@linkcode createDevice}. */
export interface DeviceOptions {
  /** Its name on the page, e.g. `A`. */
  readonly name: string;
  /** The server's origin. */
  readonly baseUrl: string;
  /** The app's OAuth client id. */
  readonly clientId: string;
}

/** A device of the playground: its panel and its client. */
export interface Device {
  /** The device's panel, for the page to place. */
  readonly panel: HTMLElement;
  /** Logs the device's client in and starts it keeping in step. */
  login(username: string, password: string): Promise<void>;
  /** Stops the client (its login revoked). */
  close(): Promise<void>;
}

/** The outbox as the device's store holds it: local writes in order, and the patch in flight. */
interface Outbox {
  readonly writes: readonly {
    readonly seq: number;
    readonly entity: string;
    readonly uuid: string;
    readonly subject: string | undefined;
    readonly deleted: boolean;
  }[];
  readonly patch: { readonly key: string; readonly seqs: readonly number[] } | undefined;
}

/** The most lines a log of the panel keeps (older ones go). */
const LOG_LINES = 50;

function isRecord(value: unknown): value is Readonly<Record<string, unknown>> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * A storage in memory whose entries the page can read as they are written:
 * the outbox the client keeps in it (its `intent/<seq>` entries and its
 * `patch`) is shown as it changes.
 */
function observedStorage(onWrite: (entries: ReadonlyMap<string, unknown>) => void): SyncStorage {
  const inner = memoryStorage();
  const entries = new Map<string, unknown>();
  return {
    load: () => inner.load(),
    async write(changes) {
      await inner.write(changes);
      for (const [key, value] of changes) {
        if (value === undefined) entries.delete(key);
        else entries.set(key, value);
      }
      onWrite(entries);
    },
    close: () => inner.close(),
  };
}

/** The outbox in a store's entries (what the client keeps; entries of another shape are left out). */
function outboxOf(entries: ReadonlyMap<string, unknown>): Outbox {
  const writes: Outbox["writes"][number][] = [];
  for (const [key, value] of entries) {
    if (!key.startsWith("intent/") || !isRecord(value)) continue;
    const { seq, entity, uuid } = value;
    const object = value["value"];
    if (typeof seq !== "number" || typeof entity !== "string" || typeof uuid !== "string") {
      continue;
    }
    const subject = isRecord(object) && typeof object["subject"] === "string"
      ? object["subject"]
      : undefined;
    writes.push({ seq, entity, uuid, subject, deleted: object === null });
  }
  writes.sort((a, b) => a.seq - b.seq);
  const patch = entries.get("patch");
  return {
    writes,
    patch: isRecord(patch) && typeof patch["key"] === "string" && Array.isArray(patch["seqs"])
      ? {
        key: patch["key"],
        seqs: patch["seqs"].filter((seq): seq is number => typeof seq === "number"),
      }
      : undefined,
  };
}

/** A switchable network: the online source the client is given, and its state. */
function switchableNetwork(): OnlineSource & { set(online: boolean): void } {
  let online = true;
  const listeners = new Set<(online: boolean) => void>();
  return {
    isOnline: () => online,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    set(value) {
      if (value === online) return;
      online = value;
      for (const listener of [...listeners]) listener(value);
    },
  };
}

/** `sent_at` now: ISO 8601 UTC to the second. */
function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** A message's subject in quotes, or what stands for a deleted one. */
function quoted(message: Message | null | undefined): string {
  return message === null || message === undefined ? "deleted" : `“${message.subject}”`;
}

/**
 * Makes a device: its panel, and a sync client that keeps its own copy of the
 * user's context in memory and learns of other devices' changes from the
 * server's change stream.
 * @param options its name, the server and the app's client id
 * @returns the device (call `login`)
 */
export function createDevice(options: DeviceOptions): Device {
  const id = `device-${options.name.toLowerCase()}`;
  const network = switchableNetwork();
  /** Requests in flight that a going offline cuts: each until its answer is read (a stream's, until it ends). */
  const inFlight = new Set<AbortController>();
  let policy: "server" | "local" = "server";
  let editing: string | undefined;
  /** The item of the message being edited, kept across renders so that a change from the server leaves the draft alone. */
  let editItem: HTMLLIElement | undefined;

  // --- The panel --------------------------------------------------------------
  const badge = h("span", { class: "badge logged-out", "data-phase": "logged-out" }, "logged out");
  const state = h("p", { class: "state" }, "Not logged in");
  const offline = h("input", { type: "checkbox", class: "offline-switch" });
  const policySelect = h(
    "select",
    { class: "policy" },
    h("option", { value: "server" }, "Server wins"),
    h("option", { value: "local" }, "Local wins"),
  );
  const subjectInput = h("input", {
    name: "subject",
    required: true,
    maxlength: "200",
    placeholder: "A new message's subject",
    "aria-label": `New message on device ${options.name}`,
  });
  const addForm = h(
    "form",
    { class: "add" },
    subjectInput,
    h("button", { type: "submit" }, "Add"),
  );
  const messageList = h("ul", { class: "messages" });
  const noMessages = h("p", { class: "empty" }, "No messages.");
  const outboxList = h("ol", { class: "log outbox" });
  const noOutbox = h("p", { class: "empty" }, "Empty: the server has every write.");
  const conflictList = h("ol", { class: "log conflicts" });
  const noConflicts = h("p", { class: "empty" }, "None yet.");
  const revisionList = h("ol", { class: "log revisions" });
  const streamState = h("span", { class: "stream-state" }, "closed");
  const panel = h(
    "section",
    { class: "device", id, "aria-labelledby": `${id}-title`, "data-online": "true" },
    h(
      "div",
      { class: "device-head" },
      h("h2", { id: `${id}-title` }, `Device ${options.name}`),
      badge,
    ),
    h(
      "div",
      { class: "controls" },
      h("label", {}, offline, "Offline"),
      h("label", {}, "On conflict", policySelect),
    ),
    state,
    h("h3", {}, "Messages"),
    addForm,
    noMessages,
    messageList,
    h("h3", {}, "Outbox"),
    noOutbox,
    outboxList,
    h("h3", {}, "Conflicts"),
    noConflicts,
    conflictList,
    h("h3", {}, "Pushed revisions (stream ", streamState, ")"),
    revisionList,
  );

  function log(list: HTMLOListElement, line: HTMLLIElement): void {
    list.prepend(line);
    while (list.children.length > LOG_LINES) list.lastElementChild?.remove();
  }

  // --- The client -------------------------------------------------------------
  /** The device's network: refused while offline; a request in flight is cut when it goes offline. */
  async function deviceFetch(input: string, init: RequestInit = {}): Promise<Response> {
    if (!network.isOnline()) {
      throw new TypeError(`Cannot reach the server: device ${options.name} is offline`);
    }
    const cut = new AbortController();
    inFlight.add(cut);
    const signal = init.signal === undefined || init.signal === null
      ? cut.signal
      : AbortSignal.any([init.signal, cut.signal]);
    signal.addEventListener("abort", () => inFlight.delete(cut), { once: true });
    try {
      const response = await fetch(input, {
        ...init,
        signal,
        credentials: "omit",
        referrerPolicy: "no-referrer",
      });
      // A stream stays cuttable while it is open; any other answer is as good as read.
      if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
        inFlight.delete(cut);
      }
      return response;
    } catch (error) {
      inFlight.delete(cut);
      throw error;
    }
  }

  /** The policy chosen in the panel's select, when the conflict comes. */
  function decide(conflict: SyncConflict) {
    return policy === "server" ? serverWins(conflict) : localWins(conflict);
  }

  const client: SyncClient = createSyncClient({
    baseUrl: options.baseUrl,
    clientId: options.clientId,
    storage: observedStorage((entries) => renderOutbox(outboxOf(entries))),
    onConflict: decide,
    fetch: deviceFetch,
    online: network,
    // A demo's pace: retries within seconds, not a minute.
    backoff: { initialDelay: 250, maxDelay: 4000 },
    watch: streamChanges({
      onOpen: (open) => {
        streamState.textContent = open ? "open" : "closed";
        panel.dataset["stream"] = open ? "open" : "closed";
      },
      onRevision: (pushed) => {
        const serial = pushed.serial === undefined ? "" : `serial ${pushed.serial}, `;
        log(
          revisionList,
          h(
            "li",
            { "data-revision": pushed.revision },
            `${clock()} ${serial}revision ${short(pushed.revision)}`,
          ),
        );
      },
    }),
  });

  client.subscribe((event) => {
    switch (event.kind) {
      case "change":
        if (event.entities.includes("messages")) renderMessages();
        break;
      case "status":
        renderStatus(event.status);
        break;
      case "conflict":
        logConflict(event.conflict, event.kept);
        break;
      case "rejected":
        log(
          conflictList,
          h(
            "li",
            { class: "rejected" },
            `${clock()} the server refused a write of ${event.entity} ${short(event.uuid)}: ${
              event.errors.flatMap((error) => error.messages.map((message) => message.message))
                .join("; ")
            }`,
          ),
        );
        noConflicts.hidden = true;
        break;
    }
  });

  // --- Rendering --------------------------------------------------------------
  function renderStatus(status: SyncStatus): void {
    badge.textContent = status.phase;
    badge.className = `badge ${status.phase}`;
    badge.dataset["phase"] = status.phase;
    panel.dataset["pending"] = String(status.pending);
    const at = status.serial === undefined
      ? "no revision yet"
      : `at serial ${status.serial} (revision ${short(status.revision ?? "")})`;
    const error = status.lastError === undefined
      ? ""
      : ` · last error: ${status.lastError.message}`;
    state.textContent = `${at} · ${status.pending} pending${error}`;
  }

  function renderOutbox(outbox: Outbox): void {
    const inPatch = new Set(outbox.patch?.seqs ?? []);
    outboxList.replaceChildren(...outbox.writes.map((write) =>
      h(
        "li",
        { "data-uuid": write.uuid, "data-sent": inPatch.has(write.seq) ? "true" : "false" },
        `#${write.seq} ${write.deleted ? "delete" : "put"} ${write.entity} ${
          write.subject === undefined ? short(write.uuid) : `“${write.subject}”`
        }${inPatch.has(write.seq) ? ` · in patch ${short(outbox.patch?.key ?? "")}` : " · queued"}`,
      )
    ));
    noOutbox.hidden = outbox.writes.length > 0;
    panel.dataset["outbox"] = String(outbox.writes.length);
  }

  function logConflict(conflict: SyncConflict, kept: unknown): void {
    if (conflict.entity !== "messages") return;
    const outcome = kept === undefined
      ? "kept the server's"
      : kept === null
      ? "deleted it again"
      : "sent the local write again";
    log(
      conflictList,
      h(
        "li",
        { "data-uuid": conflict.uuid, "data-kept": kept === undefined ? "server" : "local" },
        `${clock()} message ${short(conflict.uuid)}: here ${
          quoted(conflict.local)
        }, on the server ${quoted(conflict.server)} → ${
          policy === "server" ? "Server wins" : "Local wins"
        }: ${outcome}`,
      ),
    );
    noConflicts.hidden = true;
  }

  function renderMessages(): void {
    const messages = [...client.list("messages")].sort((a, b) =>
      a.sent_at === b.sent_at ? a.uuid.localeCompare(b.uuid) : a.sent_at.localeCompare(b.sent_at)
    );
    if (editing !== undefined && !messages.some((message) => message.uuid === editing)) {
      editing = undefined;
      editItem = undefined;
    }
    messageList.replaceChildren(...messages.map(messageItem));
    noMessages.hidden = messages.length > 0;
  }

  function messageItem(message: Message): HTMLLIElement {
    if (editing === message.uuid) {
      editItem ??= editorOf(message);
      return editItem;
    }
    const edit = h("button", { type: "button", class: "small edit-button" }, "Edit");
    const remove = h("button", { type: "button", class: "small danger" }, "Delete");
    edit.addEventListener("click", () => {
      editing = message.uuid;
      editItem = undefined;
      renderMessages();
    });
    remove.addEventListener("click", () => {
      void write(() => client.delete("messages", message.uuid));
    });
    return h(
      "li",
      { "data-uuid": message.uuid },
      h("span", { class: "subject" }, message.subject),
      edit,
      remove,
    );
  }

  /** The item that edits a message: its subject in a field, saved as a local write of the message as it is then. */
  function editorOf(message: Message): HTMLLIElement {
    const uuid = message.uuid;
    const input = h("input", {
      name: "subject",
      required: true,
      maxlength: "200",
      value: message.subject,
      "aria-label": `Subject of the message on device ${options.name}`,
    });
    const cancel = h("button", { type: "button", class: "small" }, "Cancel");
    const form = h(
      "form",
      { class: "edit" },
      input,
      h("button", { type: "submit", class: "small" }, "Save"),
      cancel,
    );
    const stop = (): void => {
      editing = undefined;
      editItem = undefined;
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      stop();
      const current = client.get("messages", uuid) ?? message;
      void write(() => client.put("messages", { ...current, subject: input.value }));
    });
    cancel.addEventListener("click", () => {
      stop();
      renderMessages();
    });
    queueMicrotask(() => input.focus());
    return h("li", { "data-uuid": uuid, class: "editing" }, form);
  }

  /** Makes a local write; a refusal (the client closed) is said in the state line. */
  async function write(run: () => Promise<void>): Promise<void> {
    try {
      await run();
    } catch (error) {
      state.textContent = `Cannot write: ${(error as Error).message}`;
    }
    renderMessages();
  }

  // --- Controls ---------------------------------------------------------------
  offline.addEventListener("change", () => {
    const online = !offline.checked;
    panel.classList.toggle("offline", !online);
    panel.dataset["online"] = String(online);
    if (!online) {
      for (const cut of [...inFlight]) {
        cut.abort(new DOMException("The device went offline", "AbortError"));
      }
      inFlight.clear();
    }
    network.set(online);
  });
  policySelect.addEventListener("change", () => {
    policy = policySelect.value === "local" ? "local" : "server";
  });
  addForm.addEventListener("submit", (event) => {
    event.preventDefault();
    const subject = subjectInput.value.trim();
    if (subject === "") return;
    subjectInput.value = "";
    void write(() =>
      client.put("messages", { uuid: crypto.randomUUID(), subject, body: "", sent_at: now() })
    );
  });

  renderStatus(client.status());
  renderMessages();

  return {
    panel,
    async login(username, password) {
      await client.login(username, password);
      client.start();
    },
    async close() {
      // The login is revoked at the server when it can be reached; an offline device only forgets it.
      if (network.isOnline()) await client.logout().catch(() => {});
      await client.close();
    },
  };
}
