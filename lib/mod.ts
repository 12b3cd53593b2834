/**
 * tributary: a water-data OData API, an OAuth token and sync service, and a
 * multi-tenant webhook relay, as one zero-dependency library.
 *
 * The root holds the entry points of an app: read a configuration, create
 * the app from its service modules (all of them, or the ones you pass), and
 * serve its handler on `node:http` or as a fetch handler. Each domain is its
 * own entry point with its chosen names (`tributary/odata`,
 * `tributary/water`, `tributary/relay`, ...), which loads only that domain;
 * the Redis and Kafka queues live at `tributary/relay/redis` and
 * `tributary/relay/kafka`, so that nothing here needs their clients.
 * `api/tributary.api.md` lists every entry point's names.
 *
 * @example Token and sync alone, on a port of your choice
 * ```ts
 * import { ACCOUNTS_MODULE, createApp, readConfig } from "tributary";
 *
 * const app = createApp(readConfig({ PORT: "8000" }), { modules: [ACCOUNTS_MODULE] });
 * await app.start();
 * await app.listen();
 * ```
 * @module
 */
export {
  ACCOUNTS_MODULE,
  BUILT_IN_MODULES,
  ConfigError,
  createApp,
  formatDescription,
  readConfig,
  RELAY_MODULE,
  WATER_MODULE,
} from "./app/mod.ts";
export type {
  App,
  AppContext,
  AppOverrides,
  Config,
  ListeningAddress,
  RunningService,
  ServiceModule,
} from "./app/mod.ts";
export { createFetchHandler, createNodeListener } from "./http/mod.ts";
export type { Handler, HttpRequest, HttpResponse } from "./http/mod.ts";
