import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AVAILABLE_SERVICES, type Config, createApp, readConfig } from "../../lib/app/mod.ts";
import { redactUrl } from "../../lib/config/mod.ts";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import { assertConfigError } from "../_helpers/config.ts";
import { makeRequest } from "../_helpers/http.ts";

const HASH = sha256Hex("hashed-secret");

describe("readConfig()", () => {
  it("uses safe defaults for an empty environment", () => {
    assert.deepEqual(readConfig({}), {
      server: {
        port: 8000,
        host: "127.0.0.1",
        services: ["water", "sync", "relay"],
        publicUrl: undefined,
        tlsCertFile: "",
        tlsKeyFile: "",
        compressAboveBytes: 1024,
        trustProxy: undefined,
        trustProxyHeaders: "x-forwarded",
      },
      log: { level: "info", format: "auto", accessLog: "on" },
      storage: {
        stateDir: "var",
        stateLockLeaseMs: 20_000,
        databaseUrl: "",
        databasePoolSize: 10,
        databaseStatementTimeoutMs: 10_000,
      },
      water: {
        dataDir: { path: "data/datasets", given: false },
        datasetCacheDir: undefined,
        apiKeysFile: { path: "data/api_keys.json", given: false },
        apiKeys: [],
        adminApiKeys: [],
        corsOrigins: [],
        rateLimitPerSecond: 2,
        rateLimitBurst: 250,
        rateLimitConcurrency: 1,
        rateLimitRedisUrl: "",
        queryTimeoutMs: 30_000,
        maxResponseBytes: 32 * 1024 * 1024,
        maxGroups: 100_000,
        renderCacheBytes: 64 * 1024 * 1024,
        mapTiles: undefined,
        mapTileAttribution: "",
      },
      auth: {
        clientsFile: { path: "data/clients.json", given: false },
        accessTokenTtlSeconds: 3600,
        refreshTokenTtlSeconds: 30 * 24 * 3600,
        refreshReuseIntervalSeconds: 30,
        passwordHashCost: 16_384,
        loginMaxFailures: 5,
        loginMaxFailuresPerName: 10,
        loginMaxFailuresPerAddress: 20,
      },
      sync: {
        queueAboveObjects: 1000,
        maxQueuedPerUser: 16,
        revisionRetentionDays: 30,
        ticketRetentionSeconds: 600,
        streamHeartbeatMs: 15_000,
        streamsPerUser: 8,
        streamsMax: 10_000,
      },
      relay: {
        storageType: "memory",
        tenantsFile: { path: "data/tenants.json", given: false },
        allowPrivateTargets: [],
        retryDelaysMs: [5000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000],
        maxAttempts: undefined,
        deliveryTimeoutMs: 15_000,
        maxPayloadBytes: 262_144,
        queueCapacity: 100_000,
        workerConcurrency: 64,
        endpointConcurrency: 8,
        secretOverlapSeconds: 86_400,
        encryptionKey: "",
        redis: { url: "", keyPrefix: "{tributary}" },
        kafka: {
          brokers: [],
          topicPrefix: "tributary",
          partitions: 8,
          groupId: "tributary-relay",
          sessionTimeoutMs: 30_000,
        },
      },
    });
  });

  it("reads the relay's settings", () => {
    const config = readConfig({
      TENANTS_FILE: "t.json",
      ALLOW_PRIVATE_TARGETS: "127.0.0.1/32, ::1",
      RETRY_SCHEDULE: "250ms,1s",
      MAX_ATTEMPTS: "5",
      DELIVERY_TIMEOUT_MS: "2000",
      MAX_PAYLOAD_BYTES: "1024",
      QUEUE_CAPACITY: "10",
      WORKER_CONCURRENCY: "4",
      ENDPOINT_CONCURRENCY: "2",
      SECRET_ROTATION_OVERLAP_SECONDS: "60",
      ENCRYPTION_KEY: "keys/public.pem",
    });
    assert.deepEqual(config.relay.tenantsFile, { path: "t.json", given: true });
    assert.deepEqual(config.relay.allowPrivateTargets, ["127.0.0.1/32", "::1/128"]);
    assert.deepEqual([config.relay.retryDelaysMs, config.relay.maxAttempts], [[250, 1000], 5]);
    assert.deepEqual(
      [
        config.relay.deliveryTimeoutMs,
        config.relay.maxPayloadBytes,
        config.relay.queueCapacity,
        config.relay.workerConcurrency,
        config.relay.endpointConcurrency,
        config.relay.secretOverlapSeconds,
        config.relay.encryptionKey,
      ],
      [2000, 1024, 10, 4, 2, 60, "keys/public.pem"],
    );
  });

  it("refuses QUEUE_SNAPSHOT_FILE, no longer read, naming it and what replaced it; empty is as unset", () => {
    assertConfigError(
      () => readConfig({ QUEUE_SNAPSHOT_FILE: "var/relay-queue.json" }),
      "QUEUE_SNAPSHOT_FILE",
      "no longer read: the memory queue keeps every accepted message in a journal in STATE_DIR",
    );
    assert.doesNotThrow(() => readConfig({ QUEUE_SNAPSHOT_FILE: "" }));
  });

  it("reads STORAGE_TYPE=redis with REDIS_URL and REDIS_KEY_PREFIX", () => {
    const config = readConfig({
      STORAGE_TYPE: "redis",
      REDIS_URL: " redis://127.0.0.1:6390/2 ",
      REDIS_KEY_PREFIX: "{relay-a}",
    });
    assert.deepEqual([
      config.relay.storageType,
      config.relay.redis.url,
      config.relay.redis.keyPrefix,
    ], ["redis", "redis://127.0.0.1:6390/2", "{relay-a}"]);
    assert.equal(readConfig({}).relay.redis.keyPrefix, "{tributary}");
  });

  it("reads STORAGE_TYPE=kafka with KAFKA_BROKER and the topic settings", () => {
    const config = readConfig({
      STORAGE_TYPE: "kafka",
      KAFKA_BROKER: " 127.0.0.1:9092, kafka-2.internal:9093 ,[::1]:9094",
      KAFKA_TOPIC_PREFIX: "relay.prod",
      KAFKA_PARTITIONS: "16",
      KAFKA_GROUP_ID: "relay-a",
      KAFKA_SESSION_TIMEOUT_MS: "10000",
    });
    assert.deepEqual(
      [
        config.relay.storageType,
        config.relay.kafka.brokers,
        config.relay.kafka.topicPrefix,
        config.relay.kafka.partitions,
        config.relay.kafka.groupId,
        config.relay.kafka.sessionTimeoutMs,
      ],
      [
        "kafka",
        ["127.0.0.1:9092", "kafka-2.internal:9093", "[::1]:9094"],
        "relay.prod",
        16,
        "relay-a",
        10_000,
      ],
    );
    const defaults = readConfig({});
    assert.deepEqual(
      [
        defaults.relay.kafka.topicPrefix,
        defaults.relay.kafka.partitions,
        defaults.relay.kafka.groupId,
        defaults.relay.kafka.sessionTimeoutMs,
      ],
      ["tributary", 8, "tributary-relay", 30_000],
    );
  });

  it("hides the password of a broken REDIS_URL", () => {
    assert.throws(
      () => readConfig({ STORAGE_TYPE: "redis", REDIS_URL: "http://app:s3cret@127.0.0.1" }),
      (error: Error) => {
        assert.ok(!error.message.includes("s3cret"), error.message);
        assert.ok(error.message.includes("http://app:***@127.0.0.1"), error.message);
        return true;
      },
    );
    assert.equal(redactUrl("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    assert.equal(redactUrl("not a url"), "not a url");
  });

  it("takes WORKER_CONCURRENCY=0 for an intake-only process", () => {
    assert.equal(readConfig({ WORKER_CONCURRENCY: "0" }).relay.workerConcurrency, 0);
  });

  const relayErrors = [
    { env: { STORAGE_TYPE: "mongo" }, variable: "STORAGE_TYPE" },
    { env: { STORAGE_TYPE: "kafka" }, variable: "KAFKA_BROKER" },
    { env: { STORAGE_TYPE: "kafka", KAFKA_BROKER: "127.0.0.1" }, variable: "KAFKA_BROKER" },
    {
      env: { STORAGE_TYPE: "kafka", KAFKA_BROKER: "127.0.0.1:9092,kafka:99999" },
      variable: "KAFKA_BROKER",
    },
    { env: { KAFKA_TOPIC_PREFIX: "my topics" }, variable: "KAFKA_TOPIC_PREFIX" },
    { env: { KAFKA_GROUP_ID: "g/1" }, variable: "KAFKA_GROUP_ID" },
    { env: { KAFKA_PARTITIONS: "0" }, variable: "KAFKA_PARTITIONS" },
    { env: { KAFKA_SESSION_TIMEOUT_MS: "5999" }, variable: "KAFKA_SESSION_TIMEOUT_MS" },
    { env: { KAFKA_SESSION_TIMEOUT_MS: "30s" }, variable: "KAFKA_SESSION_TIMEOUT_MS" },
    { env: { STORAGE_TYPE: "redis" }, variable: "REDIS_URL" },
    { env: { STORAGE_TYPE: "redis", REDIS_URL: "http://127.0.0.1:6379" }, variable: "REDIS_URL" },
    { env: { STORAGE_TYPE: "redis", REDIS_URL: "127.0.0.1:6379" }, variable: "REDIS_URL" },
    { env: { REDIS_KEY_PREFIX: "my relay" }, variable: "REDIS_KEY_PREFIX" },
    { env: { ALLOW_PRIVATE_TARGETS: "10.0.0.0/33" }, variable: "ALLOW_PRIVATE_TARGETS" },
    { env: { RETRY_SCHEDULE: "5 parsecs" }, variable: "RETRY_SCHEDULE" },
    { env: { MAX_ATTEMPTS: "0" }, variable: "MAX_ATTEMPTS" },
    { env: { DELIVERY_TIMEOUT_MS: "5" }, variable: "DELIVERY_TIMEOUT_MS" },
    { env: { MAX_PAYLOAD_BYTES: "big" }, variable: "MAX_PAYLOAD_BYTES" },
    { env: { QUEUE_CAPACITY: "0" }, variable: "QUEUE_CAPACITY" },
    { env: { WORKER_CONCURRENCY: "-1" }, variable: "WORKER_CONCURRENCY" },
    { env: { ENDPOINT_CONCURRENCY: "x" }, variable: "ENDPOINT_CONCURRENCY" },
  ] as const;
  for (const c of relayErrors) {
    it(`names ${c.variable} when it is ${JSON.stringify(Object.values(c.env)[0])}`, () => {
      assertConfigError(() => readConfig(c.env), c.variable);
    });
  }

  it("reads PASSWORD_HASH_COST only as a power of two", () => {
    assert.equal(readConfig({ PASSWORD_HASH_COST: "1024" }).auth.passwordHashCost, 1024);
    assert.throws(() => readConfig({ PASSWORD_HASH_COST: "1000" }), {
      name: "ConfigError",
      variable: "PASSWORD_HASH_COST",
    });
    assert.throws(() => readConfig({ PASSWORD_HASH_COST: "1" }), {
      name: "ConfigError",
      variable: "PASSWORD_HASH_COST",
    });
  });

  it("names the variable of a broken token or sync setting", () => {
    for (
      const variable of [
        "ACCESS_TOKEN_TTL_SECONDS",
        "REFRESH_TOKEN_TTL_SECONDS",
        "REFRESH_REUSE_INTERVAL_SECONDS",
        "LOGIN_MAX_FAILURES",
        "LOGIN_MAX_FAILURES_PER_ADDRESS",
        "SYNC_QUEUE_ABOVE_OBJECTS",
        "SYNC_MAX_QUEUED_PER_USER",
        "REVISION_RETENTION_DAYS",
        "TICKET_RETENTION_SECONDS",
      ]
    ) {
      assert.throws(
        () => readConfig({ [variable]: "-3" }),
        { name: "ConfigError", variable },
        variable,
      );
    }
  });

  it("reads TRUST_PROXY as CIDRs, naming it for anything else", () => {
    const trusted = readConfig({ TRUST_PROXY: "10.0.0.0/8, ::1, 192.0.2.7" }).server.trustProxy!;
    assert.deepEqual(trusted.ranges, ["10.0.0.0/8", "::1", "192.0.2.7"]);
    assert.equal(trusted.trusts("10.1.2.3"), true);
    assert.equal(
      trusted.trusts("::ffff:10.1.2.3"),
      true,
      "IPv4-mapped, as dual-stack sockets give it",
    );
    assert.equal(trusted.trusts("::1"), true);
    assert.equal(trusted.trusts("192.0.2.8"), false);
    assert.equal(trusted.trusts("11.0.0.1"), false);
    for (const bad of ["10.0.0.0/33", "proxy.example", "10.0.0.0/8/1", "::1/129"]) {
      assert.throws(() => readConfig({ TRUST_PROXY: bad }), {
        name: "ConfigError",
        variable: "TRUST_PROXY",
      }, bad);
    }
  });

  it("reads RENDER_CACHE_BYTES, 0 turning the cache off", () => {
    assert.equal(readConfig({ RENDER_CACHE_BYTES: "0" }).water.renderCacheBytes, 0);
    assert.equal(readConfig({ RENDER_CACHE_BYTES: "1048576" }).water.renderCacheBytes, 1_048_576);
    assert.throws(() => readConfig({ RENDER_CACHE_BYTES: "lots" }), {
      name: "ConfigError",
      variable: "RENDER_CACHE_BYTES",
    });
  });

  it("reads MAX_GROUPS, and a water app answers 400 past it", async () => {
    assert.equal(readConfig({}).water.maxGroups, 100_000);
    assert.throws(() => readConfig({ MAX_GROUPS: "0" }), {
      name: "ConfigError",
      variable: "MAX_GROUPS",
    });
    const config = readConfig({
      SERVICES: "water",
      STATE_DIR: "",
      MAX_GROUPS: "2",
      RATE_LIMIT_PER_SECOND: "0",
    });
    assert.equal(config.water.maxGroups, 2);
    const app = createApp(config, { log: { info: () => {}, error: () => {} } });
    await app.start();
    try {
      const ask = async (apply: string) => {
        const response = await app.handler(makeRequest({
          path: "/v1/odata/v4/Observations",
          query: `$apply=${encodeURIComponent(apply)}`,
          headers: { "x-api-key": "tributary-demo-key" },
        }));
        return { status: response.status, body: String(response.body) };
      };
      // The demo data has more than two characteristics and just one count of them all.
      const refused = await ask("groupby((CharacteristicName))");
      assert.equal(refused.status, 400, refused.body);
      assert.match(refused.body, /ERR_WATER_TOO_MANY_GROUPS/);
      assert.equal((await ask("aggregate($count as N)")).status, 200);
    } finally {
      await app.close();
    }
  });

  it("treats empty values as unset", () => {
    assert.deepEqual(
      readConfig({
        PORT: "",
        HOST: "",
        SERVICES: " ",
        DATA_DIR: "",
        RATE_LIMIT_PER_SECOND: "",
        QUERY_TIMEOUT_MS: "",
        PUBLIC_URL: "",
        CORS_ORIGINS: "",
        API_KEYS: "",
      }),
      { ...readConfig({}) },
    );
  });

  it("reads every variable", () => {
    const config = readConfig({
      PORT: "8080",
      HOST: "0.0.0.0",
      SERVICES: "water",
      DATA_DIR: "/srv/data",
      API_KEYS_FILE: "/etc/keys.json",
      RATE_LIMIT_PER_SECOND: "0.5",
      RATE_LIMIT_BURST: "12",
      RATE_LIMIT_CONCURRENCY: "4",
      QUERY_TIMEOUT_MS: "1000",
      MAX_RESPONSE_BYTES: "1024",
      PUBLIC_URL: "https://api.example.org",
    });
    assert.equal(config.server.port, 8080);
    assert.equal(config.server.host, "0.0.0.0");
    assert.deepEqual(config.server.services, ["water"]);
    assert.deepEqual(config.water.dataDir, { path: "/srv/data", given: true });
    assert.deepEqual(config.water.apiKeysFile, { path: "/etc/keys.json", given: true });
    assert.equal(config.water.rateLimitPerSecond, 0.5);
    assert.equal(config.water.rateLimitBurst, 12);
    assert.equal(config.water.rateLimitConcurrency, 4);
    assert.equal(config.water.queryTimeoutMs, 1000);
    assert.equal(config.water.maxResponseBytes, 1024);
    assert.equal(config.server.publicUrl, "https://api.example.org");
  });

  it("lets an empty API_KEYS_FILE mean no file", () => {
    assert.deepEqual(readConfig({ API_KEYS_FILE: "" }).water.apiKeysFile, {
      path: "",
      given: true,
    });
  });

  it("tells the files and folders the environment names from the defaults, which may be missing", () => {
    const config = readConfig({
      CLIENTS_FILE: " my/clients.json ",
      DATA_DIR: "",
      TENANTS_FILE: "data/tenants.json",
    });
    assert.deepEqual(config.auth.clientsFile, { path: "my/clients.json", given: true });
    assert.deepEqual(
      config.water.dataDir,
      { path: "data/datasets", given: false },
      "set empty: the default",
    );
    assert.deepEqual(
      config.relay.tenantsFile,
      { path: "data/tenants.json", given: true },
      "the default's own path, named: it must exist",
    );
  });

  it("lets WEBHOOK_PORT win over PORT", () => {
    assert.equal(readConfig({ PORT: "8001", WEBHOOK_PORT: "9001" }).server.port, 9001);
  });

  it("uses PORT when WEBHOOK_PORT is empty", () => {
    assert.equal(readConfig({ PORT: "8001", WEBHOOK_PORT: "" }).server.port, 8001);
  });

  it("ignores surrounding spaces in numbers", () => {
    assert.equal(readConfig({ PORT: " 8080 " }).server.port, 8080);
  });

  const bounds = [
    { name: "accepts port 0", env: { PORT: "0" }, read: (c: Config) => c.server.port, expected: 0 },
    {
      name: "accepts port 65535",
      env: { PORT: "65535" },
      read: (c: Config) => c.server.port,
      expected: 65_535,
    },
    {
      name: "accepts rate 0 (no rate limit)",
      env: { RATE_LIMIT_PER_SECOND: "0" },
      read: (c: Config) => c.water.rateLimitPerSecond,
      expected: 0,
    },
    {
      name: "accepts concurrency 0 (no limit)",
      env: { RATE_LIMIT_CONCURRENCY: "0" },
      read: (c: Config) => c.water.rateLimitConcurrency,
      expected: 0,
    },
    {
      name: "accepts a timeout of 1 ms",
      env: { QUERY_TIMEOUT_MS: "1" },
      read: (c: Config) => c.water.queryTimeoutMs,
      expected: 1,
    },
  ] as const;
  for (const c of bounds) it(c.name, () => assert.equal(c.read(readConfig(c.env)), c.expected));

  it("parses API_KEYS into hashed keys, plain or sha256", () => {
    const config = readConfig({ API_KEYS: ` alpha , sha256:${HASH.toUpperCase()} ,` });
    assert.deepEqual(config.water.apiKeys, [
      { name: "API_KEYS[1]", hash: sha256Hex("alpha") },
      { name: "API_KEYS[2]", hash: HASH },
    ]);
  });

  it("normalizes CORS_ORIGINS: trims entries and drops a trailing slash", () => {
    const config = readConfig({
      CORS_ORIGINS: " https://app.example.org/ ,http://localhost:5173,,",
    });
    assert.deepEqual(config.water.corsOrigins, [
      "https://app.example.org",
      "http://localhost:5173",
    ]);
  });

  it("drops a trailing slash from PUBLIC_URL", () => {
    const config = readConfig({ PUBLIC_URL: "https://api.example.org:8443/" });
    assert.equal(config.server.publicUrl, "https://api.example.org:8443");
  });

  const invalid = [
    { name: "refuses PORT=abc", env: { PORT: "abc" }, variable: "PORT" },
    { name: "refuses LOG_LEVEL=loud", env: { LOG_LEVEL: "loud" }, variable: "LOG_LEVEL" },
    { name: "refuses LOG_FORMAT=xml", env: { LOG_FORMAT: "xml" }, variable: "LOG_FORMAT" },
    { name: "refuses ACCESS_LOG=yes", env: { ACCESS_LOG: "yes" }, variable: "ACCESS_LOG" },
    { name: "refuses PORT=70000", env: { PORT: "70000" }, variable: "PORT" },
    {
      name: "refuses a MAP_TILE_URL without {y}",
      env: { MAP_TILE_URL: "https://tiles.example.org/{z}/{x}.png" },
      variable: "MAP_TILE_URL",
    },
    { name: "refuses PORT=-1", env: { PORT: "-1" }, variable: "PORT" },
    { name: "refuses PORT=80.5", env: { PORT: "80.5" }, variable: "PORT" },
    { name: "refuses PORT=1e3", env: { PORT: "1e3" }, variable: "PORT" },
    {
      name: "names WEBHOOK_PORT when it is the bad one",
      env: { PORT: "8000", WEBHOOK_PORT: "x" },
      variable: "WEBHOOK_PORT",
    },
    {
      name: "refuses RATE_LIMIT_PER_SECOND=-1",
      env: { RATE_LIMIT_PER_SECOND: "-1" },
      variable: "RATE_LIMIT_PER_SECOND",
    },
    {
      name: "refuses RATE_LIMIT_PER_SECOND=fast",
      env: { RATE_LIMIT_PER_SECOND: "fast" },
      variable: "RATE_LIMIT_PER_SECOND",
    },
    {
      name: "refuses RATE_LIMIT_CONCURRENCY=1.5",
      env: { RATE_LIMIT_CONCURRENCY: "1.5" },
      variable: "RATE_LIMIT_CONCURRENCY",
    },
    {
      name: "refuses QUERY_TIMEOUT_MS=0",
      env: { QUERY_TIMEOUT_MS: "0" },
      variable: "QUERY_TIMEOUT_MS",
    },
    {
      name: "refuses QUERY_TIMEOUT_MS above one hour",
      env: { QUERY_TIMEOUT_MS: "3600001" },
      variable: "QUERY_TIMEOUT_MS",
    },
    {
      name: "refuses MAX_RESPONSE_BYTES=10",
      env: { MAX_RESPONSE_BYTES: "10" },
      variable: "MAX_RESPONSE_BYTES",
    },
    {
      name: "refuses CORS_ORIGINS with a path",
      env: { CORS_ORIGINS: "https://app.example.org/app" },
      variable: "CORS_ORIGINS",
    },
    {
      name: "refuses CORS_ORIGINS with a query",
      env: { CORS_ORIGINS: "https://app.example.org/?a=1" },
      variable: "CORS_ORIGINS",
    },
    {
      name: "refuses CORS_ORIGINS with an ftp scheme",
      env: { CORS_ORIGINS: "ftp://files.example.org" },
      variable: "CORS_ORIGINS",
    },
    {
      name: "refuses CORS_ORIGINS that is not a URL",
      env: { CORS_ORIGINS: "app.example.org" },
      variable: "CORS_ORIGINS",
    },
    {
      name: "refuses a bad CORS_ORIGINS entry after a good one",
      env: { CORS_ORIGINS: "https://a.example.org, javascript:alert(1)" },
      variable: "CORS_ORIGINS",
    },
    { name: "refuses SERVICES=unknown", env: { SERVICES: "unknown" }, variable: "SERVICES" },
    {
      name: "refuses an unknown service after a known one",
      env: { SERVICES: "water,mail" },
      variable: "SERVICES",
    },
    {
      name: "refuses PUBLIC_URL=not-a-url",
      env: { PUBLIC_URL: "not-a-url" },
      variable: "PUBLIC_URL",
    },
    {
      name: "refuses PUBLIC_URL with a path",
      env: { PUBLIC_URL: "https://example.org/api" },
      variable: "PUBLIC_URL",
    },
    { name: "refuses API_KEYS=sha256:xyz", env: { API_KEYS: "sha256:xyz" }, variable: "API_KEYS" },
    {
      name: "refuses a DATABASE_URL of another scheme",
      env: { DATABASE_URL: "mysql://u:p@db/x" },
      variable: "DATABASE_URL",
    },
    {
      name: "refuses a DATABASE_URL without a host",
      env: { DATABASE_URL: "postgres:///x" },
      variable: "DATABASE_URL",
    },
    {
      name: "refuses DATABASE_POOL_SIZE=0",
      env: { DATABASE_POOL_SIZE: "0" },
      variable: "DATABASE_POOL_SIZE",
    },
    {
      name: "refuses a bad API_KEYS entry after a good one",
      env: { API_KEYS: "ok,sha256:" },
      variable: "API_KEYS",
    },
  ] as const;
  for (const c of invalid) {
    it(`${c.name} with a ConfigError naming ${c.variable}`, () => {
      assertConfigError(() => readConfig(c.env), c.variable);
    });
  }
});

describe("AVAILABLE_SERVICES", () => {
  it("lists the water, sync and relay services", () =>
    assert.deepEqual([...AVAILABLE_SERVICES], ["water", "sync", "relay"]));
});

describe("readConfig() of the storage settings", () => {
  it("reads DATABASE_URL, postgres:// or postgresql://, and hides its password when refusing it", () => {
    assert.equal(
      readConfig({ DATABASE_URL: " postgresql://app:pw@db:5432/tributary " }).storage.databaseUrl,
      "postgresql://app:pw@db:5432/tributary",
    );
    assert.throws(() => readConfig({ DATABASE_URL: "mysql://app:s3cret@db/x" }), (error: Error) => {
      assert.ok(error.message.includes("mysql://app:***@db/x"), error.message);
      assert.ok(!error.message.includes("s3cret"), error.message);
      return true;
    });
  });

  it("takes STATE_DIR empty for state in memory only", () => {
    assert.equal(readConfig({ STATE_DIR: "" }).storage.stateDir, "");
    assert.equal(readConfig({ STATE_DIR: "/srv/tributary" }).storage.stateDir, "/srv/tributary");
  });
});
