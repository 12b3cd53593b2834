/**
 * The multi-tenant webhook relay: tenants and endpoints, intake, the queue
 * port and its in-memory implementation, the worker, retry schedules,
 * the SSRF guard, dead letters and routes.
 * @module
 */
export { RelayError } from "./errors.ts";
export type { RelayErrorCode, RelayErrorOptions, RelayFieldError } from "./errors.ts";
export type {
  Attempt,
  AttemptOutcome,
  ClaimOptions,
  DeadLetterQuery,
  Death,
  EnqueueBatch,
  EnqueueResult,
  IdempotentAnswer,
  Job,
  JobQueue,
  JobState,
  JobView,
  Lease,
  QueueDepth,
} from "./queue.ts";
export { MemoryQueue } from "./memory_queue.ts";
export type { MemoryQueueOptions } from "./memory_queue.ts";
