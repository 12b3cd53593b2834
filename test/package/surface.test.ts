// The public surface as the sources define it: the root re-exports each
// domain's names flat, and engine internals and the optional adapters stay out.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import * as root from "../../lib/mod.ts";
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
import * as water from "../../lib/water/mod.ts";

const DOMAINS = { app, auth, config, crypto, http, log, metrics, odata, relay, storage, sync, water } as const;

describe("the root entry point", () => {
  for (const [name, domain] of Object.entries(DOMAINS)) {
    it(`exports every name of ${name} as that domain does`, () => {
      for (const [key, value] of Object.entries(domain)) assert.equal((root as Record<string, unknown>)[key], value, `${name}.${key}`);
    });
  }

  it("exports nothing no domain exports", () => {
    const known = new Set(Object.values(DOMAINS).flatMap((domain) => Object.keys(domain)));
    assert.deepEqual(Object.keys(root).filter((key) => !known.has(key)), []);
  });

  // The connections to shared backends (connectPostgres, connectRedis) are storage's and exported with it;
  // each imports its client only when called.
  // The columnar engine (lib/columnar) is the package's own: no entry point, nothing in the root.
  const internals = ["compileFilter", "MatchCursor", "countMatches", "rowNumberReader", "nextUp", "nextDown", "RenderCache", "RowWriterCache", "renderKey", "KafkaQueue", "connectKafka", "RedisQueue", "createRouteNamer"];
  for (const name of internals) {
    it(`keeps ${name} out`, () => assert.equal(name in root, false));
  }
});
