/**
 * The multi-tenant webhook relay: tenants and endpoints, intake, the queue
 * port and its in-memory implementation, the worker, retry schedules,
 * the SSRF guard, dead letters and routes.
 * @module
 */
export { RelayError } from "./errors.ts";
export type { RelayErrorCode, RelayErrorOptions, RelayFieldError } from "./errors.ts";
export { RELAY_ERROR_STATUS } from "./error_status.ts";
export type {
  Attempt,
  AttemptBucket,
  AttemptCounts,
  AttemptOutcome,
  ClaimOptions,
  DeadLetterQuery,
  Death,
  DeliveryStatus,
  EnqueueBatch,
  EnqueueResult,
  IdempotentAnswer,
  Job,
  JobQueue,
  JobState,
  JobView,
  Lease,
  MessageCursor,
  MessagePage,
  MessageQuery,
  QueueDepth,
  QueueInspection,
  QueueLifecycle,
} from "./queue.ts";
export { MemoryQueue } from "./memory_queue.ts";
export type { MemoryQueueOptions } from "./memory_queue.ts";
export type { MemoryQueueSnapshot, QueueChange, SnapshotJob } from "./_memory_queue_snapshot.ts";
export { EndpointDirectory } from "./endpoint_directory.ts";
export type {
  DirectoryOpening,
  EndpointDirectoryOptions,
  TenantDirectory,
} from "./endpoint_directory.ts";
export { MemoryConfigStore } from "./config_store.ts";
export type { ConfigPut, ConfigRecord, ConfigSnapshot, ConfigStore } from "./config_store.ts";
export { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, retryDelay } from "./backoff.ts";
export type {
  ExponentialRetrySchedule,
  FixedRetrySchedule,
  RetrySchedule,
  RetryScheduleLimits,
} from "./backoff.ts";
export { createAddressPolicy, guardedLookup } from "./address_policy.ts";
export type {
  AddressCheck,
  AddressPolicy,
  AddressPolicyOptions,
  HostAddress,
  HostLookup,
  HostLookupOptions,
} from "./address_policy.ts";
export type { EventMatcher } from "./event_patterns.ts";
export { TenantRegistry } from "./tenants.ts";
export type { Endpoint, SigningSecret, Tenant, TenantRegistryOptions } from "./tenants.ts";
export { readTenantsFile } from "./read_tenants_file.ts";
export { createRelayService } from "./create_relay_service.ts";
export { acceptWebhook, webhookAnswer } from "./accept_webhook.ts";
export type { AcceptedWebhook, IntakeContext, WebhookSubmission } from "./accept_webhook.ts";
export type { RelayServiceOptions } from "./create_relay_service.ts";
export { createHttpDelivery } from "./http_delivery.ts";
export type {
  Deliver,
  DeliveryRequest,
  DeliveryResult,
  HttpDeliveryOptions,
} from "./http_delivery.ts";
export { RelayWorker } from "./worker.ts";
export type { RelayWorkerOptions } from "./worker.ts";
export { registerRelayMetrics } from "./relay_metrics.ts";
export type { RelayMetrics } from "./relay_metrics.ts";
export { RELAY_SETTINGS } from "./settings.ts";
export type { RelayConfig } from "./settings.ts";
export { startRelayService } from "./start_relay_service.ts";
export type { StartRelayServiceOptions } from "./start_relay_service.ts";
export { RELAY_MODULE } from "./relay_module.ts";
export type { RelayContext, RelayModuleConfig } from "./relay_module.ts";
