import type { MetricsRegistry } from "../metrics/mod.ts";
import type { Attempt, Job, QueueDepth } from "./queue.ts";

/** The relay's hooks that count into Prometheus metrics. */
export interface RelayMetrics {
  /** For the intake's `onAccepted`. */
  accepted(tenantId: string, jobs: readonly Job[]): void;
  /** For the worker's `onAttempt`. */
  attempt(job: Job, attempt: Attempt): void;
  /** For the worker's `onDead`. */
  dead(job: Job, reason: string): void;
}

/**
 * Registers the relay's metrics: `tributary_relay_messages_accepted_total`,
 * `tributary_relay_jobs_queued_total`, `tributary_relay_delivery_attempts_total{outcome}`,
 * `tributary_relay_delivery_duration_seconds`, `tributary_relay_messages_dead_total`
 * and `tributary_relay_queue_depth{state}` (read from `depth` at scrape time).
 * Tenants are not labels: their number is not bounded.
 * @param registry where to register them
 * @param depth the queue's latest depth by state
 * @returns the hooks to give the intake and the worker
 */
export function registerRelayMetrics(
  registry: MetricsRegistry,
  depth: () => QueueDepth,
): RelayMetrics {
  const accepted = registry.counter({
    name: "tributary_relay_messages_accepted_total",
    help: "Webhooks accepted at intake",
  }).labels({});
  const queued = registry.counter({
    name: "tributary_relay_jobs_queued_total",
    help: "Delivery jobs queued at intake, one per matching endpoint",
  }).labels({});
  const attempts = registry.counter({
    name: "tributary_relay_delivery_attempts_total",
    help: "Delivery attempts by outcome",
    labelNames: ["outcome"],
  });
  const duration = registry.histogram({
    name: "tributary_relay_delivery_duration_seconds",
    help: "Time from sending a delivery to its answer or failure",
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
  }).labels({});
  const dead = registry.counter({
    name: "tributary_relay_messages_dead_total",
    help: "Delivery jobs moved to the dead letters",
  }).labels({});
  registry.gauge({
    name: "tributary_relay_queue_depth",
    help: "Delivery jobs by state",
    labelNames: ["state"],
    collect: () => Object.entries(depth()).map(([state, value]) => ({ labels: { state }, value })),
  });
  return {
    accepted(_tenantId, jobs) {
      accepted.inc();
      if (jobs.length > 0) queued.inc(jobs.length);
    },
    attempt(_job, attempt) {
      attempts.labels({ outcome: attempt.outcome }).inc();
      duration.observe(attempt.latencyMs / 1000);
    },
    dead() {
      dead.inc();
    },
  };
}
