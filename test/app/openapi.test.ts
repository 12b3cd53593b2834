// /openapi.json against a real OpenAPI 3.1 validator, and every operation it
// documents driven with requests built from it: parameters from their
// examples (or from the values another answer's links give), bodies from the
// examples, credentials as its security schemes say; each answer's status
// must be documented and its body must validate against the documented
// schema (ajv, JSON Schema 2020-12, the dialect of OpenAPI 3.1).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { validate } from "@readme/openapi-parser";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";

type Json = { readonly [key: string]: unknown };
type Operation = {
  readonly operationId: string;
  readonly parameters?: readonly {
    name: string;
    in: string;
    required: boolean;
    example: unknown;
  }[];
  readonly requestBody?: {
    required: boolean;
    content: Readonly<Record<string, { example?: unknown }>>;
  };
  readonly responses: Readonly<
    Record<
      string,
      {
        content?: Readonly<Record<string, unknown>>;
        links?: Readonly<
          Record<string, { operationId: string; parameters: Readonly<Record<string, string>> }>
        >;
      }
    >
  >;
  readonly security: readonly Readonly<Record<string, readonly string[]>>[];
};

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;
const NOW = Date.parse("2026-11-24T12:00:00Z");
const ENV = {
  STATE_DIR: "",
  API_KEYS: "water-test-key",
  ADMIN_API_KEYS: "admin-test-key",
  DATA_DIR: "data/datasets",
  CLIENTS_FILE: "data/clients.json",
  TENANTS_FILE: "data/tenants.json",
  RATE_LIMIT_PER_SECOND: "0",
  RATE_LIMIT_CONCURRENCY: "0",
  LOG_LEVEL: "error",
};
/** What the demo files hold: a backend with SignUp, a public app with the password grant, a tenant. */
const BACKEND = { id: "demo-backend", secret: "demo-backend-secret" };
const PUBLIC_APP = "demo-app";
const TENANT_KEY = "demo-acme-key";
/** The one operation that cannot succeed: the count of a collection that does not exist answers only 404, by design. */
const NO_SUCCESS_EXPECTED = new Set(["countUnknownCollection"]);

/**
 * An app on the demo data; its relay delivers nowhere: the first delivery
 * fails (once, for good: MAX_ATTEMPTS=1), so that there is a dead letter to
 * list and replay, and the others succeed.
 */
function build(env: Readonly<Record<string, string>>): App {
  let deliveries = 0;
  return createApp(readConfig({ ...ENV, MAX_ATTEMPTS: "1", ...env }), {
    now: () => NOW,
    deliver: () =>
      Promise.resolve({
        kind: "response",
        status: ++deliveries === 1 ? 500 : 200,
        retryAfter: undefined,
      }),
  });
}

/** Sends a webhook to the demo tenant and waits, a turn of the event loop at a time, until its failed delivery is a dead letter. */
async function deadLetter(url: string): Promise<void> {
  const headers = { authorization: `Bearer ${TENANT_KEY}`, "content-type": "application/json" };
  const sent = await fetch(`${url}/webhook`, {
    method: "POST",
    headers,
    body: JSON.stringify({ event: "order.failed", data: {} }),
  });
  assert.equal(sent.status, 202);
  for (let turn = 0; turn < 10_000; turn++) {
    const listed = (await (await fetch(`${url}/webhook/dead-letters`, { headers })).json()) as {
      data: unknown[];
    };
    if (listed.data.length > 0) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.fail("the failed delivery never became a dead letter");
}

async function documentOf(url: string): Promise<Json> {
  const response = await fetch(`${url}/openapi.json`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^application\/json/);
  return (await response.json()) as Json;
}

function operationsOf(document: Json): { method: string; path: string; operation: Operation }[] {
  const found: { method: string; path: string; operation: Operation }[] = [];
  for (
    const [path, item] of Object.entries(
      document["paths"] as Record<string, Record<string, Operation>>,
    )
  ) {
    for (const [method, operation] of Object.entries(item)) {
      found.push({ method: method.toUpperCase(), path, operation });
    }
  }
  return found;
}

/** `$response.body#/a/0/b` of a parsed body; undefined when it leads nowhere. */
function pointer(body: unknown, expression: string): unknown {
  const match = /^\$response\.body#(.*)$/.exec(expression);
  assert.ok(match !== null, `a link's expression: ${expression}`);
  let at: unknown = body;
  for (const raw of match[1]!.split("/").slice(1)) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (typeof at !== "object" || at === null) return undefined;
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** A Server-Sent Events body up to the end of its first event (a block with an `id:` line), the stream then cancelled. */
async function firstEvent(response: Response): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!/(?:^|\n\n)id: [^\n]*\n(?:[^\n]+\n)*\n/.test(text)) {
    const { done, value } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

describe("GET /openapi.json", () => {
  let app: App;
  let url: string;
  let document: Json;

  before(async () => {
    app = build({});
    await app.start();
    url = (await app.listen({ port: 0, host: "127.0.0.1" })).url;
    document = await documentOf(url);
    await deadLetter(url);
  });
  after(() => app.close());

  it("passes the OpenAPI 3.1 validator of @readme/openapi-parser", async () => {
    assert.equal(document["openapi"], "3.1.0");
    const result = await validate(structuredClone(document) as never);
    assert.deepEqual(result, { valid: true, warnings: [], specification: "OpenAPI" });
  });

  it("is refused by the validator once broken, so the check bites", async () => {
    const broken = structuredClone(document) as {
      paths: Record<string, Record<string, { parameters: { in: string }[] }>>;
    };
    broken.paths["/v1/odata/v4/Locations"]!["get"]!.parameters[0]!.in = "body";
    const result = await validate(broken as never);
    assert.equal(result.valid, false);
  });

  it("names the origin it was asked at as its server", () => {
    assert.deepEqual(document["servers"], [{ url }]);
  });

  it("lists the host's, water's, sync's and the relay's routes, the health checks and itself among them", () => {
    const listed = new Set(operationsOf(document).map(({ method, path }) => `${method} ${path}`));
    for (
      const route of [
        "GET /health/live",
        "GET /health/ready",
        "GET /metrics",
        "GET /openapi.json",
        "GET /v1/odata/v4/Locations",
        "POST /oauth2/token",
        "POST /api/v2/sync/user",
        "GET /webhook/messages",
        "GET /webhook/stats",
        "GET /webhook/portal",
        "GET /sync/playground",
        "GET /",
      ]
    ) {
      assert.ok(listed.has(route), route);
    }
  });

  it("has every path it documents named in the README's Endpoints section", () => {
    const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
    const section = readme.slice(
      readme.indexOf("\n## Endpoints\n"),
      readme.indexOf("\n## Configuration\n"),
    );
    // Paths in code spans, e.g. `GET /webhook/endpoints/<id>` or `/v1/odata/v4/<Collection>/$count?…`.
    const named = [...section.matchAll(/`(?:[A-Z, ]+ )?(\/(?:<[^>`]*>|[^`?\s])*)/g)].map((match) =>
      match[1]!.split("/")
    );
    // A placeholder (`<id>`, `<Collection>(<Id>)`) stands for any text: for a template of the document, or a name.
    const segmentFits = (segment: string, shown: string): boolean => {
      if (!shown.includes("<")) return segment === shown;
      if (/^\{[^}]+\}$/.test(segment)) return true;
      const pattern = shown.split(/<[^>]*>/).map((part) =>
        part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
      ).join(".+");
      return new RegExp(`^${pattern}$`).test(segment);
    };
    const fits = (path: string[], shown: string[]): boolean =>
      path.length === shown.length && path.every((segment, i) => segmentFits(segment, shown[i]!));
    const missing = Object.keys(document["paths"] as Json).filter((path) =>
      !named.some((shown) => fits(path.split("/"), shown))
    );
    assert.deepEqual(missing, []);
  });

  it("answers every documented operation, built from the document, as the document says", async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema(document, "openapi.json");
    const schemes = (document["components"] as {
      securitySchemes: Record<
        string,
        {
          type: string;
          scheme?: string;
          in?: string;
          name?: string;
          flows?: Record<string, { tokenUrl: string }>;
        }
      >;
    }).securitySchemes;
    const all = operationsOf(document);
    const byId = new Map(all.map((entry) => [entry.operation.operationId, entry]));
    const linked = new Map<string, Map<string, unknown>>();
    const targets = new Set(
      all.flatMap(({ operation }) =>
        Object.values(operation.responses).flatMap((response) =>
          Object.values(response.links ?? {}).map((link) => link.operationId)
        )
      ),
    );
    // Sources before the operations their links fill (which follow them at once); deletions last, the account's very last.
    const rank = (entry: (typeof all)[number]): number =>
      entry.operation.operationId === "deleteAccount"
        ? 3
        : entry.method === "DELETE"
        ? 2
        : targets.has(entry.operation.operationId)
        ? 1
        : 0;
    const ordered = [...all].sort((a, b) => rank(a) - rank(b));

    // Credentials for each security scheme, got as the document says (tokens at the oauth2 flows' tokenUrl).
    const tokens = new Map<string, string>();
    const signUpExample = byId.get("signUp")!.operation.requestBody!.content["application/json"]!
      .example as { username: string; password: string };
    async function token(scope: string): Promise<string> {
      const known = tokens.get(scope);
      if (known !== undefined) return known;
      const flows = schemes["oauth2"]!.flows!;
      let response: Response;
      if (scope === "SignUp") {
        response = await fetch(new URL(flows["clientCredentials"]!.tokenUrl, url), {
          method: "POST",
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Basic ${btoa(`${BACKEND.id}:${BACKEND.secret}`)}`,
          },
          body: new URLSearchParams({ grant_type: "client_credentials", scope }),
        });
      } else {
        const signUp = await fetch(`${url}/api/v2/sign-up`, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            authorization: `Bearer ${await token("SignUp")}`,
          },
          body: JSON.stringify(signUpExample),
        });
        assert.ok(signUp.status === 201 || signUp.status === 409, `sign-up: ${signUp.status}`);
        response = await fetch(new URL(flows["password"]!.tokenUrl, url), {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "password",
            client_id: PUBLIC_APP,
            username: signUpExample.username,
            password: signUpExample.password,
            scope,
          }),
        });
      }
      assert.equal(response.status, 200, `a ${scope} token`);
      const value = ((await response.json()) as { access_token: string }).access_token;
      tokens.set(scope, value);
      return value;
    }
    async function credentials(operation: Operation): Promise<Record<string, string>> {
      const requirement = operation.security[0];
      if (requirement === undefined) return {};
      const headers: Record<string, string> = {};
      for (const [name, scopes] of Object.entries(requirement)) {
        const scheme = schemes[name]!;
        if (scheme.type === "oauth2") {
          headers["authorization"] = `Bearer ${await token(scopes[0]!)}`;
        } else if (scheme.type === "http" && scheme.scheme === "basic") {
          headers["authorization"] = `Basic ${btoa(`${BACKEND.id}:${BACKEND.secret}`)}`;
        } else {
          const key = name.startsWith("admin")
            ? ENV.ADMIN_API_KEYS
            : name.startsWith("tenant")
            ? TENANT_KEY
            : ENV.API_KEYS;
          if (scheme.type === "http") headers["authorization"] = `Bearer ${key}`;
          else headers[scheme.name!.toLowerCase()] = key;
        }
      }
      return headers;
    }

    /** Sends one request and holds its answer to the document; returns its status and the operations its links filled. */
    async function check(
      entry: (typeof all)[number],
      optional: string | undefined,
      withCredentials: boolean,
    ): Promise<{ status: number; filled: string[] }> {
      const { method, path, operation } = entry;
      const values = linked.get(operation.operationId);
      let target = path;
      const query = new URLSearchParams();
      const headers: Record<string, string> = withCredentials ? await credentials(operation) : {};
      for (const parameter of operation.parameters ?? []) {
        if (!parameter.required && parameter.name !== optional) continue;
        const value = String(values?.get(parameter.name) ?? parameter.example);
        if (parameter.in === "path") {
          target = target.replace(`{${parameter.name}}`, encodeURIComponent(value));
        } else if (parameter.in === "query") query.set(parameter.name, value);
        else headers[parameter.name.toLowerCase()] = value;
      }
      let body: string | undefined;
      const content = operation.requestBody?.content;
      if (content !== undefined) {
        const type = Object.hasOwn(content, "application/json")
          ? "application/json"
          : Object.keys(content)[0]!;
        const example = content[type]!.example;
        if (example !== undefined) {
          headers["content-type"] = type;
          body = type === "application/x-www-form-urlencoded"
            ? new URLSearchParams(example as Record<string, string>).toString()
            : JSON.stringify(example);
        }
      }
      const shown = `${method} ${target}${query.size > 0 ? `?${query}` : ""}${
        withCredentials ? "" : " without credentials"
      }`;
      const response = await fetch(`${url}${target}${query.size > 0 ? `?${query}` : ""}`, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
      }).catch((error: Error) => {
        throw new Error(`${shown}: ${String(error.cause)}`);
      });
      const documented = operation.responses[String(response.status)];
      const type = (response.headers.get("content-type") ?? "").split(";")[0]!.trim();
      // A stream never ends by itself: read up to its first event, then go away.
      const text = type === "text/event-stream"
        ? await firstEvent(response)
        : await response.text();
      assert.ok(
        documented !== undefined,
        `${shown}: ${response.status} is not documented (${text.slice(0, 300)})`,
      );
      if (documented.content === undefined) {
        assert.equal(text, "", `${shown}: ${response.status} documents no body`);
        return { status: response.status, filled: [] };
      }
      if (text === "") return { status: response.status, filled: [] };
      assert.ok(
        Object.hasOwn(documented.content, type),
        `${shown}: ${type} is not a documented type of ${response.status}`,
      );
      const pointerTo = `openapi.json#/paths/${
        path.replaceAll("~", "~0").replaceAll("/", "~1")
      }/${method.toLowerCase()}/responses/${response.status}/content/${
        type.replaceAll("/", "~1")
      }/schema`;
      const validator = ajv.getSchema(pointerTo) ?? ajv.compile({ $ref: pointerTo });
      const parsed: unknown = type.endsWith("json") ? JSON.parse(text) : text;
      assert.ok(
        validator(parsed),
        `${shown}: the ${response.status} body does not fit its schema: ${
          ajv.errorsText(validator.errors)
        }\n${text.slice(0, 500)}`,
      );
      const filled: string[] = [];
      for (const link of Object.values(documented.links ?? {})) {
        for (const [name, expression] of Object.entries(link.parameters)) {
          const value = pointer(parsed, expression);
          if (value === undefined) continue;
          const values = linked.get(link.operationId) ?? new Map<string, unknown>();
          values.set(name, value);
          linked.set(link.operationId, values);
          filled.push(link.operationId);
        }
      }
      return { status: response.status, filled };
    }

    const succeeded = new Set<string>();
    const followed = new Set<string>();
    let requests = 0;
    /** Drives one operation (its base request, then one with each optional parameter), then, once each, those its answers' links fill. */
    async function drive(entry: (typeof all)[number]): Promise<void> {
      const { operation } = entry;
      const optional = (operation.parameters ?? []).filter((parameter) => !parameter.required).map((
        parameter,
      ) => parameter.name);
      const follow: string[] = [];
      // Without credentials first (an operation that needs some must answer a documented refusal).
      if (
        operation.security.length > 0 &&
        !operation.security.some((requirement) => Object.keys(requirement).length === 0)
      ) {
        const { status } = await check(entry, undefined, false);
        requests++;
        assert.ok(status >= 400, `${entry.method} ${entry.path} without credentials: ${status}`);
      }
      for (const parameter of [undefined, ...optional]) {
        const { status, filled } = await check(entry, parameter, true);
        requests++;
        if (status < 400) succeeded.add(operation.operationId);
        follow.push(...filled);
      }
      for (const id of follow) {
        if (followed.has(id)) continue;
        followed.add(id);
        await drive(byId.get(id)!);
      }
    }
    // Each operation in turn; a link's target also right after the first answer that fills it.
    for (const entry of ordered) await drive(entry);
    const failures = all.filter(({ operation }) =>
      !succeeded.has(operation.operationId) && !NO_SUCCESS_EXPECTED.has(operation.operationId)
    )
      .map(({ method, path }) => `${method} ${path}`);
    assert.deepEqual(failures, [], "operations whose documented examples never succeeded");
    assert.ok(requests > all.length, `${requests} requests`);
  });
});

describe("GET /openapi.json with some services", () => {
  for (
    const [services, present, absent] of [
      ["water", "/v1/odata/v4/Records", "/webhook"],
      ["relay", "/webhook", "/oauth2/token"],
      ["sync", "/api/v2/sync/user", "/v1/odata/v4/Records"],
    ] as const
  ) {
    it(`documents only what SERVICES=${services} mounts`, async () => {
      const app = build({ SERVICES: services });
      try {
        await app.start();
        const { url } = await app.listen({ port: 0, host: "127.0.0.1" });
        const document = await documentOf(url);
        const paths = Object.keys(document["paths"] as Json);
        assert.ok(paths.includes(present), present);
        assert.ok(!paths.includes(absent), absent);
        assert.ok(paths.includes("/health/ready") && paths.includes("/openapi.json"));
        const result = await validate(structuredClone(document) as never);
        assert.equal(result.valid, true);
      } finally {
        await app.close();
      }
    });
  }
});
