// The public surface as the sources define it: the root is a short list of
// an app's entry points, each domain's mod.ts a chosen list, and what the
// domains share among themselves (their _internal.ts) stays out of both.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import * as root from "../../lib/mod.ts";
import * as accounts from "../../lib/accounts/mod.ts";
import * as app from "../../lib/app/mod.ts";
import * as auth from "../../lib/auth/mod.ts";
import * as config from "../../lib/config/mod.ts";
import * as crypto from "../../lib/crypto/mod.ts";
import * as http from "../../lib/http/mod.ts";
import * as log from "../../lib/log/mod.ts";
import * as metrics from "../../lib/metrics/mod.ts";
import * as odata from "../../lib/odata/mod.ts";
import * as relay from "../../lib/relay/mod.ts";
import * as storage from "../../lib/storage/mod.ts";
import * as sync from "../../lib/sync/mod.ts";
import * as syncClient from "../../lib/sync_client/mod.ts";
import * as water from "../../lib/water/mod.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const DOMAINS = {
  accounts,
  app,
  auth,
  config,
  crypto,
  http,
  log,
  metrics,
  odata,
  relay,
  storage,
  sync,
  sync_client: syncClient,
  water,
} as const;

describe("the root entry point", () => {
  it("exports an app's entry points and nothing else", () => {
    assert.deepEqual(Object.keys(root).sort(), [
      "ACCOUNTS_MODULE",
      "BUILT_IN_MODULES",
      "ConfigError",
      "RELAY_MODULE",
      "WATER_MODULE",
      "createApp",
      "createFetchHandler",
      "createNodeListener",
      "formatDescription",
      "readConfig",
    ]);
  });

  it("exports each name as the domain that owns it does", () => {
    const owned = new Set(Object.values(DOMAINS).flatMap((domain) => Object.values(domain)));
    for (const [key, value] of Object.entries(root)) {
      assert.ok(owned.has(value), `${key} is no domain's`);
    }
    assert.equal(root.createApp, app.createApp);
    assert.equal(root.createNodeListener, http.createNodeListener);
    assert.equal(root.WATER_MODULE, water.WATER_MODULE);
    assert.equal(root.ACCOUNTS_MODULE, accounts.ACCOUNTS_MODULE);
  });
});

describe("the domains' entry points", () => {
  /** Every `_internal.ts` of lib: the folder, and the names it exports. */
  function internals(): Array<{ domain: string; names: string[] }> {
    const found: Array<{ domain: string; names: string[] }> = [];
    for (const domain of readdirSync(join(ROOT, "lib"))) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, "lib", domain, "_internal.ts"), "utf8");
      } catch {
        continue;
      }
      const names = [...text.matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((match) =>
        match[1]!.split(",").map((part) => part.trim().split(" as ").pop()!).filter((name) =>
          name !== ""
        )
      );
      found.push({ domain, names });
    }
    return found;
  }

  it("keep what the domains share among themselves out of their public lists", () => {
    const shared = internals();
    assert.ok(shared.length >= 5, `${shared.length} internal modules`);
    for (const { domain, names } of shared) {
      const exported = (DOMAINS as Record<string, Record<string, unknown>>)[domain];
      if (exported === undefined) continue;
      for (const name of names) {
        assert.equal(
          name in exported,
          false,
          `${domain} exports ${name}, which its _internal.ts shares`,
        );
      }
    }
  });

  it("are the only modules package.json exports: no _ module, no file of a domain", () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      exports: Record<string, unknown>;
    };
    for (const [entry, target] of Object.entries(manifest.exports)) {
      if (entry === "./package.json") continue;
      assert.match(JSON.stringify(target), /\/mod\.(js|d\.ts)"/, entry);
      assert.doesNotMatch(entry, /\/_/, entry);
    }
  });

  // The connections to shared backends (connectPostgres, connectRedis, connectKafka) are
  // storage's and exported with it; each imports its client only when called. The columnar
  // engine (lib/columnar) is the package's own.
  const kept = {
    odata: ["compileFilter", "MatchCursor", "countMatches", "rowNumberReader", "isCalendarDate"],
    water: ["RenderCache", "FIELD_ESCAPED", "SNAPSHOT_HEAD_BYTES"],
    http: ["compressParts", "startPeriodicTask", "waitAtMost", "startInterval", "createRouteNamer"],
    relay: ["KafkaQueue", "connectKafka", "RedisQueue"],
  } as const;
  for (const [domain, names] of Object.entries(kept)) {
    for (const name of names) {
      it(`keeps ${name} out of ${domain} and the root`, () => {
        assert.equal(name in (DOMAINS as Record<string, object>)[domain]!, false);
        assert.equal(name in root, false);
      });
    }
  }
});
