// The composition root: reads the configuration, loads the data, builds the
// services and serves them on one port. It holds no logic of its own.
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { createAuthService, LoginThrottle, MemoryAuthStore, requireUser, TokenService } from "./lib/auth/mod.ts";
import { pooledRandom, uuidV4 } from "./lib/crypto/mod.ts";
import { type Config, ConfigError, readApiKeysFile, readClientsFile, readConfig } from "./lib/config/mod.ts";
import {
  type ApiKey,
  createNodeListener,
  indexApiKeys,
  jsonResponse,
  type Mount,
  mountHandlers,
} from "./lib/http/mod.ts";
import { createSyncService, MemorySyncStore, SerialJobs } from "./lib/sync/mod.ts";
import { createWaterService, type LoadReport, loadDatasets } from "./lib/water/mod.ts";

const WATER_BASE = "/v1/odata/v4";
const SYNC_BASE = "/api/v2/sync/user";

async function main(): Promise<void> {
  const config = readConfig(process.env);
  // API keys guard the water data only: a server without it needs none.
  const { keys, plain } = config.services.includes("water") ? await loadKeys(config) : { keys: [], plain: new Map<string, string>() };
  const now = (): number => performance.now();
  const mounts: Mount[] = [];
  /** Work to finish before exiting, after the server stops accepting requests. */
  const drains: (() => Promise<void>)[] = [];
  if (config.services.includes("water")) {
    const { store, report } = await loadDatasets(config.dataDir);
    printReport(report, config.dataDir);
    mounts.push({
      prefix: WATER_BASE,
      handler: createWaterService(store, {
        keys: indexApiKeys(keys),
        now,
        corsOrigins: config.corsOrigins,
        ratePerSecond: config.ratePerSecond,
        maxConcurrent: config.maxConcurrent,
        queryTimeoutMs: config.queryTimeoutMs,
        maxResponseBytes: config.maxResponseBytes,
        renderCacheBytes: config.renderCacheBytes,
      }),
    });
  }
  if (config.services.includes("sync")) {
    const { clients, plain: secrets } = readClientsFile(await readText(config.clientsFile, "CLIENTS_FILE"), config.clientsFile);
    const random = pooledRandom();
    const store = new MemoryAuthStore();
    const tokens = new TokenService({
      store,
      clients,
      now: Date.now,
      random,
      throttle: new LoginThrottle({
        now: Date.now,
        maxPerUser: config.loginMaxFailures,
        maxPerAddress: config.loginMaxFailuresPerAddress,
      }),
      accessTtlSeconds: config.accessTokenTtlSeconds,
      refreshTtlSeconds: config.refreshTokenTtlSeconds,
      passwordCost: config.passwordHashCost,
    });
    const contexts = new MemorySyncStore({
      now: Date.now,
      uuid: () => uuidV4(random),
      revisionRetention: config.revisionRetentionDays * 24 * 3600 * 1000,
      ticketRetention: config.ticketRetentionSeconds * 1000,
    });
    const auth = createAuthService(tokens, {
      onUserCreated: async (user) => {
        await contexts.createContext({ uuid: user.uuid, username: user.username, notifyLanguage: user.notifyLanguage });
      },
    });
    for (const prefix of ["/oauth2", "/.well-known/oauth-authorization-server", "/api/v2/sign-up"]) {
      mounts.push({ prefix, handler: auth });
    }
    const jobs = new SerialJobs({ onError: (error) => console.error("Sync job failed:", error) });
    drains.push(() => jobs.idle());
    mounts.push({
      prefix: SYNC_BASE,
      handler: createSyncService(contexts, {
        authorize: (request) => requireUser(request, tokens, { scope: "UserActivity" }),
        jobs,
        queueAboveObjects: config.syncQueueAboveObjects,
        maxPendingPerUser: config.syncMaxQueuedPerUser,
        base: SYNC_BASE,
      }),
    });
    setInterval(() => {
      void store.sweep(Date.now());
      void contexts.sweep();
    }, 60_000).unref();
    for (const client of clients) {
      const secret = secrets.get(client.id);
      const kind = client.secretHash === undefined ? "public" : secret === undefined ? "confidential" : `secret ${secret}`;
      console.log(`OAuth client "${client.id}" (${kind}): ${[...client.grantTypes].join(", ")}; scopes ${client.scopes.join(" ")}`);
    }
  }
  mounts.push({ prefix: "/health", handler: () => jsonResponse(200, { status: "ok", services: config.services }) });
  const server = createServer(
    { requestTimeout: 60_000, headersTimeout: 15_000, keepAliveTimeout: 5_000, maxHeaderSize: 16_384 },
    createNodeListener(mountHandlers(mounts), {
      onError: (error) => console.error("Unexpected error:", error),
      ...(config.publicUrl === undefined ? {} : { publicOrigin: config.publicUrl }),
    }),
  );
  await listen(server, config);
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : config.port;
  const shown = config.host === "0.0.0.0" || config.host === "::" ? "localhost" : config.host;
  const url = config.publicUrl ?? `http://${shown}:${port}`;
  console.log(`tributary listening on ${url} (services: ${config.services.join(", ")})`);
  if (config.services.includes("water")) {
    for (const [name, key] of plain) console.log(`API key "${name}": ${key}`);
    const demo = plain.values().next().value ?? "<your key>";
    console.log(`Try: curl -H 'x-api-key: ${demo}' '${url}${WATER_BASE}/Locations?$top=2'`);
  }
  if (config.services.includes("sync")) {
    console.log(`Token endpoint: ${url}/oauth2/token; sync API: ${url}${SYNC_BASE} (see the README for a walk-through)`);
  }
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      console.log(`${signal}: finishing requests in flight, then exiting`);
      server.close(() => void Promise.all(drains.map((drain) => drain())).then(() => process.exit(0)));
      server.closeIdleConnections();
      setTimeout(() => process.exit(0), 10_000).unref();
    });
  }
}

async function readText(file: string, variable: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch {
    throw new ConfigError(variable, `Cannot start: ${variable} names ${file}, which cannot be read`);
  }
}

async function loadKeys(config: Config): Promise<{ keys: ApiKey[]; plain: Map<string, string> }> {
  const keys: ApiKey[] = [...config.apiKeys];
  let plain = new Map<string, string>();
  if (config.apiKeysFile !== "") {
    let text: string;
    try {
      text = await readFile(config.apiKeysFile, "utf8");
    } catch {
      throw new ConfigError("API_KEYS_FILE", `Cannot start: API_KEYS_FILE names ${config.apiKeysFile}, which cannot be read`);
    }
    const file = readApiKeysFile(text, config.apiKeysFile);
    keys.push(...file.keys);
    plain = file.plain;
  }
  if (keys.length === 0) {
    throw new ConfigError("API_KEYS", "Cannot start: no API keys are configured; set API_KEYS or API_KEYS_FILE");
  }
  return { keys, plain };
}

function printReport(report: LoadReport, dir: string): void {
  let rows = 0;
  for (const dataset of report.datasets) {
    rows += dataset.rows;
    const skipped = dataset.skippedRows === 0 ? "" : `, ${dataset.skippedRows} rows skipped`;
    console.log(`Loaded ${dataset.folder} (${dataset.doi}): ${dataset.rows} observations, ${dataset.locations} locations${skipped}`);
    for (const issue of dataset.issues) {
      console.log(`  ${issue.file}:${issue.line}:${issue.column}${issue.field === undefined ? "" : ` (${issue.field})`}: ${issue.message}`);
    }
  }
  for (const failure of report.failures) console.log(`Not loaded: ${failure.file}: ${failure.message}`);
  console.log(`${report.datasets.length} datasets, ${rows} observations from ${dir}`);
}

function listen(server: Server, config: Config): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) => {
      const variable = process.env["WEBHOOK_PORT"] ? "WEBHOOK_PORT" : "PORT";
      reject(
        error.code === "EADDRINUSE"
          ? new ConfigError(variable, `Cannot start: port ${config.port} is in use; choose another with ${variable}`)
          : error,
      );
    });
    server.listen(config.port, config.host, () => resolve());
  });
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
