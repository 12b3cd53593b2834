/**
 * The app: the three services composed from one configuration, as the
 * server runs them and as a host embeds them. `readConfig(env)` reads the
 * environment, `createApp(config)` builds the enabled services with their
 * stores, workers and metrics behind one handler, `start()` loads and
 * connects, `listen()` serves, and `close()` drains in order, within a bound.
 * @module
 */
export { BUILT_IN_MODULES, createApp } from "./create_app.ts";
export type {
  App,
  AppContext,
  AppDescription,
  AppOverrides,
  ListeningAddress,
  ServiceModule,
} from "./app_types.ts";
export { openBackends } from "./open_backends.ts";
export type { Backends, OpenBackendsOptions } from "./open_backends.ts";
export { APP_SETTINGS, AVAILABLE_SERVICES, readConfig } from "./read_config.ts";
export type { Config, ServiceName } from "./read_config.ts";
export { formatDescription } from "./format_description.ts";
export type { FormatDescriptionOptions } from "./format_description.ts";
export { createConsoleLogger } from "./console_logger.ts";
export type { ConsoleLoggerOptions, LogStream } from "./console_logger.ts";
export { createReadinessCheck } from "./create_readiness_check.ts";
export type {
  ReadinessCheckOptions,
  ReadinessProblem,
  ReadinessReport,
  ReadinessSource,
} from "./create_readiness_check.ts";
export { createHealthHandler } from "./create_health_handler.ts";
export type { GuardedProcess } from "./process_guard.ts";
export type { AppState } from "./app_state.ts";
export type { HealthHandlerOptions } from "./create_health_handler.ts";
export { ConfigError } from "../config/mod.ts";
export type { Environment } from "../config/mod.ts";
export { ACCOUNTS_MODULE } from "../accounts/mod.ts";
export { WATER_MODULE } from "../water/mod.ts";
export { RELAY_MODULE } from "../relay/mod.ts";
export type { RunningService } from "../http/mod.ts";
