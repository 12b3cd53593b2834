import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import {
  type ConfigRecord,
  type ConfigStore,
  EndpointDirectory,
  MemoryConfigStore,
  TenantRegistry,
} from "../../lib/relay/mod.ts";
import { signingKeys } from "../../lib/relay/tenants.ts";
import { countingRandom, FakeClock, SECRET } from "../_helpers/relay.ts";

const OTHER_SECRET = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

/** A process's registry as the tenants file makes it: tenant acme with the file's endpoints. */
function fromFile(
  clock: FakeClock,
  endpoints: readonly Record<string, unknown>[],
  seed = 0,
): TenantRegistry {
  const random = countingRandom();
  for (let i = 0; i < seed; i++) random(1);
  const registry = new TenantRegistry({ now: clock.now, random, secretOverlapMs: 60_000 });
  registry.addTenant("acme", [sha256Hex("acme-key")]);
  for (const endpoint of endpoints) registry.createEndpoint("acme", endpoint);
  return registry;
}

const FILE = [{
  id: "orders",
  url: "https://a.example/orders",
  events: ["order.*"],
  secret: SECRET,
}];

/** A store that tells no one: a process that has not heard of the others' changes yet. */
function deaf(store: ConfigStore): ConfigStore {
  return {
    load: () => store.load(),
    put: (key, value, expected) => store.put(key, value, expected),
    watch: () => () => {},
    close: () => Promise.resolve(),
  };
}

describe("EndpointDirectory", () => {
  it("writes the tenants file's endpoints to an empty store and reads them back at the next start", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    const first = new EndpointDirectory(fromFile(clock, FILE), store);
    assert.deepEqual(await first.open(), { loaded: 0, seeded: 1, keptFromApi: [], removed: 0 });
    assert.equal((await store.load()).length, 1);
    const again = new EndpointDirectory(fromFile(clock, FILE), store);
    assert.deepEqual(
      await again.open(),
      { loaded: 1, seeded: 0, keptFromApi: [], removed: 0 },
      "the same file changes nothing",
    );
    assert.equal(again.endpoint("acme", "orders")!.url, "https://a.example/orders");
  });

  it("keeps what the API made and changed over a restart with the same file: endpoints, settings, a rotated secret, a deletion", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    const first = new EndpointDirectory(
      fromFile(clock, [...FILE, {
        id: "gone",
        url: "https://a.example/gone",
        events: ["*"],
        secret: SECRET,
      }]),
      store,
    );
    await first.open();
    const made = await first.createEndpoint("acme", {
      url: "https://b.example/in",
      events: ["*"],
      rate_limit_per_second: 5,
    });
    await first.updateEndpoint("acme", "orders", { url: "https://a.example/v2", enabled: false });
    const rotated = await first.rotateSecret("acme", "orders", OTHER_SECRET);
    assert.equal(await first.deleteEndpoint("acme", "gone"), true);
    assert.equal(
      await first.deleteEndpoint("acme", "gone"),
      false,
      "deleting twice finds nothing the second time",
    );

    clock.time += 1000;
    const next = new EndpointDirectory(
      fromFile(clock, [...FILE, {
        id: "gone",
        url: "https://a.example/gone",
        events: ["*"],
        secret: SECRET,
      }]),
      store,
    );
    const opening = await next.open();
    assert.deepEqual([...opening.keptFromApi].sort(), ["acme/gone", "acme/orders"]);
    assert.equal(opening.seeded, 0);
    assert.equal(
      next.endpoint("acme", "gone"),
      undefined,
      "deleted through the API, not brought back by the file",
    );
    const orders = next.endpoint("acme", "orders")!;
    assert.equal(orders.url, "https://a.example/v2");
    assert.equal(orders.enabled, false);
    assert.deepEqual(
      orders.secrets.map((secret) => [secret.secret, secret.expiresAt]),
      rotated.secrets.map((secret) => [secret.secret, secret.expiresAt]),
    );
    assert.deepEqual(
      orders.secrets.map((secret) => secret.secret),
      [OTHER_SECRET, SECRET],
      "the rotated secret, not the file's",
    );
    const b = next.endpoint("acme", made.id)!;
    assert.equal(b.url, "https://b.example/in");
    assert.equal(b.rateLimitPerSecond, 5);
    assert.equal(b.secrets[0]!.secret, made.secrets[0]!.secret);
    // Both secrets sign during the overlap, only the new one after it, on the restarted process too.
    assert.equal(signingKeys(orders, clock.time).length, 2);
    assert.equal(signingKeys(orders, rotated.updatedAt + 60_001).length, 1);
  });

  it("follows the file for endpoints only the file set: a change in the file is written, an endpoint it drops is deleted", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    await new EndpointDirectory(
      fromFile(clock, [...FILE, {
        id: "old",
        url: "https://a.example/old",
        events: ["*"],
        secret: SECRET,
      }]),
      store,
    ).open();
    const next = new EndpointDirectory(
      fromFile(clock, [{ ...FILE[0]!, url: "https://a.example/moved" }]),
      store,
    );
    assert.deepEqual(await next.open(), { loaded: 2, seeded: 1, keptFromApi: [], removed: 1 });
    assert.equal(next.endpoint("acme", "orders")!.url, "https://a.example/moved");
    assert.equal(next.endpoint("acme", "old"), undefined);
    const third = new EndpointDirectory(
      fromFile(clock, [{ ...FILE[0]!, url: "https://a.example/moved" }]),
      store,
    );
    assert.deepEqual(await third.open(), { loaded: 2, seeded: 0, keptFromApi: [], removed: 0 });
  });

  it("keeps an endpoint disabled by a 410 disabled over a restart, and still the file's", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    const first = new EndpointDirectory(fromFile(clock, FILE), store);
    await first.open();
    assert.equal(
      (await first.disableEndpoint("acme", "orders", "the receiver answered 410 Gone"))!.enabled,
      false,
    );
    assert.equal(await first.disableEndpoint("acme", "nowhere", "x"), undefined);
    const next = new EndpointDirectory(fromFile(clock, FILE), store);
    assert.deepEqual((await next.open()).keptFromApi, []);
    assert.equal(next.endpoint("acme", "orders")!.disabledReason, "the receiver answered 410 Gone");
  });

  it("applies another process's changes as the store tells of them, and serves them to intake", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    const a = new EndpointDirectory(fromFile(clock, FILE), store);
    const b = new EndpointDirectory(fromFile(clock, FILE, 1000), store);
    await a.open();
    await b.open();
    const made = await a.createEndpoint("acme", {
      url: "https://b.example/in",
      events: ["invoice.*"],
    });
    assert.deepEqual(b.route("acme", "invoice.paid").map((endpoint) => endpoint.id), [made.id]);
    await a.rotateSecret("acme", made.id);
    assert.equal(b.endpoint("acme", made.id)!.secrets.length, 2);
    await a.deleteEndpoint("acme", made.id);
    assert.deepEqual(b.route("acme", "invoice.paid"), []);
  });

  it("makes a change again from the newer endpoint when another process changed it first, losing neither", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    const a = new EndpointDirectory(fromFile(clock, FILE), store);
    await a.open();
    // b does not hear of a's change before making its own.
    const b = new EndpointDirectory(fromFile(clock, FILE, 1000), deaf(store));
    await b.open();
    await a.updateEndpoint("acme", "orders", { url: "https://a.example/from-a" });
    const rotated = await b.rotateSecret("acme", "orders", OTHER_SECRET);
    assert.equal(rotated.url, "https://a.example/from-a", "b's rotation kept a's new URL");
    assert.equal(
      a.endpoint("acme", "orders")!.secrets[0]!.secret,
      OTHER_SECRET,
      "a heard of b's rotation",
    );
    // Two processes creating one id: the second is told it exists.
    await a.createEndpoint("acme", { id: "same", url: "https://c.example/", events: ["*"] });
    await assert.rejects(
      b.createEndpoint("acme", { id: "same", url: "https://d.example/", events: ["*"] }),
      { code: "ERR_RELAY_ENDPOINT_EXISTS" },
    );
  });

  it("refuses bad input before anything is stored", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    const directory = new EndpointDirectory(fromFile(clock, FILE), store);
    await directory.open();
    const before = await store.load();
    await assert.rejects(directory.createEndpoint("acme", { url: "ftp://x", events: ["*"] }), {
      code: "ERR_RELAY_INVALID_ENDPOINT",
      target: "url",
    });
    await assert.rejects(directory.updateEndpoint("acme", "orders", { colour: "red" }), {
      code: "ERR_RELAY_INVALID_ENDPOINT",
    });
    await assert.rejects(directory.rotateSecret("acme", "nowhere"), {
      code: "ERR_RELAY_UNKNOWN_ENDPOINT",
    });
    assert.deepEqual(await store.load(), before);
  });

  it("skips and reports a stored record it cannot read, and records of tenants it does not know", async () => {
    const clock = new FakeClock();
    const store = new MemoryConfigStore();
    await store.put("acme/broken", "{not json", 0);
    await store.put(
      "initech/x",
      JSON.stringify({ v: 1, origin: "api", file: null, endpoint: null }),
      0,
    );
    const errors: unknown[] = [];
    const directory = new EndpointDirectory(fromFile(clock, FILE), store, {
      onError: (error) => errors.push(error),
    });
    assert.equal((await directory.open()).loaded, 2);
    assert.match(String(errors[0]), /Cannot read the stored endpoint acme\/broken/);
    assert.deepEqual(directory.endpoints("acme").map((endpoint) => endpoint.id), ["orders"]);
  });

  it("answers 503 when the store keeps saying another change came first", async () => {
    const clock = new FakeClock();
    const inner = new MemoryConfigStore();
    const store: ConfigStore = {
      ...deaf(inner),
      put: async () => ({ stored: false, current: undefined }),
    };
    const directory = new EndpointDirectory(fromFile(clock, []), store);
    await directory.open();
    await assert.rejects(
      directory.createEndpoint("acme", { url: "https://a.example/", events: ["*"] }),
      { code: "ERR_RELAY_QUEUE_UNAVAILABLE" },
    );
  });

  it("passes on a store that is away as its 503", async () => {
    const clock = new FakeClock();
    const away = Object.assign(new Error("Cannot use the relay's configuration: away"), {
      code: "ERR_RELAY_QUEUE_UNAVAILABLE",
    });
    const store: ConfigStore = {
      load: () => Promise.resolve([] as ConfigRecord[]),
      put: () => Promise.reject(away),
      watch: () => () => {},
      close: () => Promise.resolve(),
    };
    const directory = new EndpointDirectory(fromFile(clock, []), store);
    await directory.open();
    await assert.rejects(
      directory.createEndpoint("acme", { url: "https://a.example/", events: ["*"] }),
      away,
    );
    assert.deepEqual(directory.endpoints("acme"), [], "nothing applied that was not stored");
  });
});
