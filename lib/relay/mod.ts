/**
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
export { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, retryAfterDelay, retryDelay } from "./backoff.ts";
export type { ExponentialRetrySchedule, FixedRetrySchedule, RetrySchedule, RetryScheduleLimits } from "./backoff.ts";
export { checkTarget, createAddressPolicy, guardedLookup, parseCidrList } from "./address_policy.ts";
export type { AddressCheck, AddressPolicy, AddressPolicyOptions } from "./address_policy.ts";
