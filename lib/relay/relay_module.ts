import type { RunningService, ServiceLog } from "../http/mod.ts";
import type { MetricsRegistry } from "../metrics/mod.ts";
import type { connectKafka, connectRedis, StateDir } from "../storage/mod.ts";
import type { RelayConfig } from "./settings.ts";
import type { Deliver } from "./http_delivery.ts";
import { startRelayService } from "./start_relay_service.ts";

/** What the relay module reads of an app's configuration. */
export interface RelayModuleConfig {
  readonly relay: RelayConfig;
}

/** What the relay module needs of the app it runs in. */
export interface RelayContext {
  readonly metrics: MetricsRegistry;
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  readonly random: (size: number) => Uint8Array;
  readonly log: ServiceLog;
  /**
   * The app's backends: the state folder (`STATE_DIR`), which the memory
   * queue and the endpoints journal in (its path, empty to keep them in
   * memory only, and the folder opened), and the connections to Redis and
   * Kafka the queue's backend is reached by.
   */
  readonly backends: {
    readonly stateDirPath: string;
    readonly stateDir: () => Promise<StateDir>;
    readonly redis: typeof connectRedis;
    readonly kafka: typeof connectKafka;
  };
  /** How deliveries are sent, when a host replaces HTTP. */
  readonly deliver?: Deliver;
}

/**
 * The webhook relay as one module of an app: tenants and endpoints,
 * intake, the queue on the configured backend (the memory queue journaled
 * in `STATE_DIR`, Redis or Kafka) and the delivery worker. Its `SERVICES`
 * name is `relay`.
 * @example
 * ```ts
 * const app = createApp(readConfig(process.env), { modules: [RELAY_MODULE] });
 * ```
 */
export const RELAY_MODULE = {
  name: "relay",
  /**
   * Opens the relay's stores and starts intake and delivery.
   * @param config the relay's settings
   * @param context the app's metrics, clocks, randomness, log and backends
   * @returns the relay
   */
  async start(
    config: RelayModuleConfig,
    context: RelayContext,
  ): Promise<readonly RunningService[]> {
    // The memory queue journals in STATE_DIR (an empty STATE_DIR keeps it in memory only).
    const journaled = config.relay.storageType === "memory" &&
      context.backends.stateDirPath !== "";
    return [
      await startRelayService(config.relay, {
        metrics: context.metrics,
        now: context.now,
        random: context.random,
        log: context.log,
        ...(journaled ? { state: await context.backends.stateDir() } : {}),
        redis: context.backends.redis,
        kafka: context.backends.kafka,
        ...(context.deliver === undefined ? {} : { deliver: context.deliver }),
      }),
    ];
  },
} as const;
