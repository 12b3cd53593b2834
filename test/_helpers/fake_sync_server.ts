// A small model of the token and sync service as a `fetch`, for the sync
// client's tests: logins and refreshes, revocation, snapshots and diffs by
// serial, patches checked against their base revision (an object changed
// since is a conflict) and applied once per Idempotency-Key, tickets. A test
// may answer any request itself first (`override`), and reads what was sent.

type Fields = { readonly [field: string]: string | boolean | null };

/** What the fake was sent. */
export interface FakeRequest {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers: Headers;
  readonly body: string;
}

interface Stored {
  readonly entity: "messages" | "teams";
  readonly value: Fields | null;
  readonly serial: number;
}

const json = (status: number, body: unknown): Response =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** The revision id of a serial. */
export function revisionOf(serial: number): string {
  return `00000000-0000-4000-8000-${String(serial).padStart(12, "0")}`;
}

/** The fake service. */
export class FakeSyncServer {
  serial = 1;
  readonly objects = new Map<string, Stored>();
  readonly sent: FakeRequest[] = [];
  readonly revoked: string[] = [];
  /** Answers a request before the model does; undefined lets the model answer. */
  override: (request: FakeRequest) => Response | Error | undefined = () => undefined;
  readonly #keys = new Map<string, unknown>();
  readonly #tickets = new Map<string, unknown>();
  #tokens = 0;

  /** The fetch a client is given. */
  readonly fetch = (input: string, init?: RequestInit): Promise<Response> => {
    const url = new URL(input);
    const request: FakeRequest = {
      method: init?.method ?? "GET",
      path: url.pathname,
      query: url.search,
      headers: new Headers(init?.headers),
      body: typeof init?.body === "string" ? init.body : "",
    };
    this.sent.push(request);
    const answer = this.override(request) ?? this.#answer(request);
    return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
  };

  /** An object as the server has it. */
  get(uuid: string): Fields | null | undefined {
    return this.objects.get(uuid)?.value;
  }

  /** Writes as another device would: a new revision. */
  write(entity: "messages" | "teams", uuid: string, value: Fields | null): void {
    this.serial++;
    this.objects.set(uuid, { entity, value, serial: this.serial });
  }

  /** The requests sent to a path (and method). */
  count(path: string, method = "GET"): number {
    return this.sent.filter((r) => r.method === method && r.path === path).length;
  }

  #data(since: number | undefined): unknown {
    const objects: { messages: Fields[]; teams: Fields[] } = { messages: [], teams: [] };
    const deleted: { messages: string[]; teams: string[] } = { messages: [], teams: [] };
    for (const [uuid, stored] of this.objects) {
      if (since !== undefined && stored.serial <= since) continue;
      if (stored.value === null) {
        if (since !== undefined) deleted[stored.entity].push(uuid);
      } else objects[stored.entity].push(stored.value);
    }
    return {
      ...(since === undefined ? {} : { base_revision: revisionOf(since) }),
      revision: revisionOf(this.serial),
      serial: this.serial,
      objects: { me: null, ...objects },
      ...(since === undefined ? {} : { deleted_objects: { me: null, ...deleted } }),
    };
  }

  #answer(request: FakeRequest): Response {
    if (request.path === "/oauth2/token") {
      const n = ++this.#tokens;
      return json(200, {
        access_token: `access-${n}`,
        token_type: "Bearer",
        expires_in: 3600,
        refresh_token: `refresh-${n}`,
      });
    }
    if (request.path === "/oauth2/revoke") {
      this.revoked.push(new URLSearchParams(request.body).get("token") ?? "");
      return new Response(null, { status: 200 });
    }
    const base = "/api/v2/sync/user";
    if (request.method === "GET" && request.path === base) {
      return json(200, { ticket: null, data: this.#data(undefined) });
    }
    if (request.method === "GET" && request.path.startsWith(`${base}/since/`)) {
      const since = Number(request.path.slice(-12));
      if (since === this.serial) return new Response(null, { status: 204 });
      return json(200, { ticket: null, data: this.#data(since) });
    }
    if (request.method === "GET" && request.path.startsWith(`${base}/ticket/`)) {
      const ticket = this.#tickets.get(request.path.slice(`${base}/ticket/`.length));
      return ticket === undefined ? json(404, {}) : json(200, ticket);
    }
    if (request.method === "POST" && request.path === base) {
      const key = request.headers.get("idempotency-key") ?? "";
      const known = this.#keys.get(key);
      if (known !== undefined) return json(202, known);
      const answer = { ticket: this.#apply(JSON.parse(request.body)), data: null };
      this.#keys.set(key, answer);
      this.#tickets.set(answer.ticket.uuid, answer);
      return json(202, answer);
    }
    return json(404, {});
  }

  #apply(patch: {
    base_revision: string;
    objects: { messages?: Fields[]; teams?: Fields[] };
    deleted_objects: { messages?: string[]; teams?: string[] };
  }) {
    const base = Number(patch.base_revision.slice(-12));
    const uuid = revisionOf(1000 + this.#tickets.size);
    const writes: { entity: "messages" | "teams"; uuid: string; value: Fields | null }[] = [];
    for (const entity of ["messages", "teams"] as const) {
      for (const value of patch.objects[entity] ?? []) {
        writes.push({ entity, uuid: String(value["uuid"]), value });
      }
      for (const gone of patch.deleted_objects[entity] ?? []) {
        writes.push({ entity, uuid: gone, value: null });
      }
    }
    const conflicts = writes.filter((w) => (this.objects.get(w.uuid)?.serial ?? 0) > base);
    if (conflicts.length > 0) {
      return {
        uuid,
        status: "aborted",
        errors: conflicts.map((w) => ({
          section: w.value === null ? "deleted_objects" : "objects",
          entity: w.entity,
          key: { uuid: w.uuid },
          attribute: null,
          messages: [{ level: "error", code: "conflict", message: "Changed since the base" }],
        })),
      };
    }
    this.serial++;
    for (const w of writes) {
      this.objects.set(w.uuid, { entity: w.entity, value: w.value, serial: this.serial });
    }
    return { uuid, status: "done", errors: [] };
  }
}
