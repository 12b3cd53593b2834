import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compileEventPatterns } from "../../lib/relay/event_patterns.ts";
import { MAX_ROUTES_PER_TENANT } from "../../lib/relay/tenants.ts";
import { readTenantsFile, TenantRegistry } from "../../lib/relay/mod.ts";
import { countingRandom, FakeClock, SECRET } from "../_helpers/relay.ts";

describe("compileEventPatterns()", () => {
  const cases = [
    { patterns: ["*"], event: "anything.at.all", expected: true },
    { patterns: ["user.created"], event: "user.created", expected: true },
    { patterns: ["user.created"], event: "user.deleted", expected: false },
    { patterns: ["user.*"], event: "user.created", expected: true },
    { patterns: ["user.*"], event: "user.profile.updated", expected: true },
    { patterns: ["user.*"], event: "user", expected: false },
    { patterns: ["user.*"], event: "users.created", expected: false },
    { patterns: ["invoice.paid", "user.*"], event: "invoice.paid", expected: true },
  ] as const;
  for (const c of cases) {
    it(`${c.expected ? "matches" : "does not match"} ${c.event} with ${c.patterns.join(", ")}`, () => {
      assert.equal(compileEventPatterns(c.patterns).matches(c.event), c.expected);
    });
  }
  for (const bad of [[], ["a.*.b"], ["*.a"], [""], ["a b"], [7]]) {
    it(`refuses ${JSON.stringify(bad)}`, () => {
      assert.throws(() => compileEventPatterns(bad), { code: "ERR_RELAY_INVALID_ENDPOINT" });
    });
  }
});

describe("readTenantsFile()", () => {
  function load(file: unknown): { registry: TenantRegistry; plain: Map<string, string[]> } {
    const clock = new FakeClock();
    const registry = new TenantRegistry({ now: clock.now, random: countingRandom() });
    const plain = readTenantsFile(
      registry,
      typeof file === "string" ? file : JSON.stringify(file),
      "tenants.json",
    );
    return { registry, plain };
  }
  const endpoint = { id: "e1", url: "http://127.0.0.1:9000/hook", events: ["*"], secret: SECRET };

  it("loads tenants, their hashed and plain keys, and their endpoints", () => {
    const hashed = `sha256:${"ab".repeat(32)}`;
    const { registry, plain } = load({
      tenants: [{ id: "acme", api_keys: ["k1", hashed], endpoints: [endpoint] }],
    });
    assert.equal(registry.authenticate("k1")?.id, "acme");
    assert.equal(registry.authenticate("k2"), undefined);
    assert.deepEqual(plain.get("acme"), ["k1"]);
    assert.deepEqual(registry.route("acme", "x").map((e) => e.id), ["e1"]);
  });

  it("loads the demo file of data/", async () => {
    const { readFile } = await import("node:fs/promises");
    const { registry } = load(
      await readFile(new URL("../../data/tenants.json", import.meta.url), "utf8"),
    );
    assert.ok(registry.tenants().length >= 1);
  });

  const bad: { name: string; file: unknown; message: RegExp }[] = [
    { name: "text that is not JSON", file: "{", message: /not JSON/ },
    { name: "a file without tenants", file: {}, message: /"tenants"/ },
    { name: "an unknown top-level field", file: { tenants: [], x: 1 }, message: /"x" is unknown/ },
    {
      name: "a tenant without keys",
      file: { tenants: [{ id: "a", api_keys: [] }] },
      message: /api_keys/,
    },
    {
      name: "a bad hashed key",
      file: { tenants: [{ id: "a", api_keys: ["sha256:zz"] }] },
      message: /api_keys\[0\]/,
    },
    {
      name: "a bad tenant id",
      file: { tenants: [{ id: "a b", api_keys: ["k"] }] },
      message: /tenant id/,
    },
    {
      name: "a duplicate tenant",
      file: { tenants: [{ id: "a", api_keys: ["k"] }, { id: "a", api_keys: ["j"] }] },
      message: /twice/,
    },
    {
      name: "a key shared by two tenants",
      file: { tenants: [{ id: "a", api_keys: ["k"] }, { id: "b", api_keys: ["k"] }] },
      message: /also a key/,
    },
    {
      name: "an unknown tenant field",
      file: { tenants: [{ id: "a", api_keys: ["k"], colour: 1 }] },
      message: /colour/,
    },
    {
      name: "an endpoint without a secret",
      file: {
        tenants: [{ id: "a", api_keys: ["k"], endpoints: [{ ...endpoint, secret: undefined }] }],
      },
      message: /secret is required/,
    },
    {
      name: "an endpoint with a bad URL",
      file: {
        tenants: [{ id: "a", api_keys: ["k"], endpoints: [{ ...endpoint, url: "mailto:x" }] }],
      },
      message: /endpoints\[0\]\.url/,
    },
  ];
  for (const c of bad) {
    it(`refuses ${c.name}, naming the file and the field`, () => {
      assert.throws(() => load(c.file), (error: Error & { code?: string }) => {
        assert.equal(error.code, "ERR_RELAY_INVALID_TENANTS");
        assert.match(error.message, /tenants\.json/);
        assert.match(error.message, c.message);
        return true;
      });
    });
  }
});

describe("TenantRegistry.route()", () => {
  function registry(): TenantRegistry {
    const clock = new FakeClock();
    const made = new TenantRegistry({ now: clock.now, random: countingRandom() });
    made.addTenant("acme", []);
    made.createEndpoint("acme", {
      id: "all",
      url: "https://a.example/",
      events: ["*"],
      secret: SECRET,
    });
    made.createEndpoint("acme", {
      id: "users",
      url: "https://u.example/",
      events: ["user.*"],
      secret: SECRET,
    });
    return made;
  }
  const ids = (endpoints: readonly { id: string }[]): string[] =>
    endpoints.map((endpoint) => endpoint.id);

  it("follows every change to the tenant's endpoints, though it remembers routes", () => {
    const r = registry();
    assert.deepEqual(ids(r.route("acme", "user.created")), ["all", "users"]);
    r.updateEndpoint("acme", "users", { events: ["invoice.*"] });
    assert.deepEqual(ids(r.route("acme", "user.created")), ["all"]);
    r.createEndpoint("acme", {
      id: "more",
      url: "https://m.example/",
      events: ["user.created"],
      secret: SECRET,
    });
    assert.deepEqual(ids(r.route("acme", "user.created")), ["all", "more"]);
    r.disableEndpoint("acme", "all", "gone");
    assert.deepEqual(ids(r.route("acme", "user.created")), ["more"]);
    r.deleteEndpoint("acme", "more");
    assert.deepEqual(ids(r.route("acme", "user.created")), []);
    r.updateEndpoint("acme", "all", { enabled: true });
    const before = r.route("acme", "user.created")[0]!;
    r.rotateSecret("acme", "all");
    const after = r.route("acme", "user.created")[0]!;
    assert.notEqual(
      after.secrets[0]!.secret,
      before.secrets[0]!.secret,
      "routes hand out the endpoint as it is now",
    );
  });

  it("stays right past the number of events it remembers", () => {
    const r = registry();
    for (let i = 0; i <= MAX_ROUTES_PER_TENANT + 5; i++) {
      assert.deepEqual(ids(r.route("acme", `user.e${i}`)), ["all", "users"]);
    }
    assert.deepEqual(ids(r.route("acme", "invoice.paid")), ["all"]);
    assert.deepEqual(ids(r.route("globex", "user.e1")), []);
  });
});
