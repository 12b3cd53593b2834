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
} from "./queue.ts";
export { ATTEMPT_STATS_BUCKET_MS, ATTEMPT_STATS_RETENTION_MS, deliveryStatus, endpointKey } from "./queue.ts";
export { MemoryQueue } from "./memory_queue.ts";
export type { MemoryQueueOptions, MemoryQueueSnapshot, QueueChange, SnapshotJob } from "./memory_queue.ts";
export { EndpointDirectory } from "./endpoint_directory.ts";
export type { DirectoryOpening, EndpointDirectoryOptions, EndpointOrigin, TenantDirectory } from "./endpoint_directory.ts";
export { MemoryConfigStore } from "./config_store.ts";
export type { ConfigPut, ConfigRecord, ConfigSnapshot, ConfigStore } from "./config_store.ts";
export { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule, retryAfterDelay, retryDelay } from "./backoff.ts";
export type { ExponentialRetrySchedule, FixedRetrySchedule, RetrySchedule, RetryScheduleLimits } from "./backoff.ts";
export { checkTarget, createAddressPolicy, guardedLookup, parseCidrList } from "./address_policy.ts";
export type { AddressCheck, AddressPolicy, AddressPolicyOptions, HostAddress, HostLookup, HostLookupOptions } from "./address_policy.ts";
export { compileEventPatterns, EVENT_NAME, MAX_EVENT_LENGTH } from "./event_patterns.ts";
export type { EventMatcher } from "./event_patterns.ts";
export { MAX_ROUTES_PER_TENANT, RELAY_ID, signingKeys, TenantRegistry } from "./tenants.ts";
export type { Endpoint, EndpointInput, SigningSecret, Tenant, TenantRegistryOptions } from "./tenants.ts";
export { readTenantsFile } from "./read_tenants_file.ts";
export { RELAY_SECURITY_SCHEMES } from "./api_docs.ts";
export { createRelayService } from "./create_relay_service.ts";
export { acceptWebhook, checkIdempotencyKey, parseWebhook, webhookAnswer } from "./accept_webhook.ts";
export type { AcceptedWebhook, IntakeContext, WebhookSubmission } from "./accept_webhook.ts";
export { createMessageIds } from "./message_ids.ts";
export type { RelayServiceOptions } from "./create_relay_service.ts";
export { createHttpDelivery } from "./http_delivery.ts";
export type { Deliver, DeliveryRequest, DeliveryResult, HttpDeliveryOptions } from "./http_delivery.ts";
export { RelayWorker } from "./worker.ts";
export type { RelayWorkerOptions } from "./worker.ts";
export { registerRelayMetrics } from "./relay_metrics.ts";
export type { RelayMetrics } from "./relay_metrics.ts";
export { RELAY_SETTINGS, STORAGE_TYPES } from "./settings.ts";
export type { RelayConfig, StorageType } from "./settings.ts";
export { startRelayService } from "./start_relay_service.ts";
export type { StartRelayServiceOptions } from "./start_relay_service.ts";
export { readEncryptionKey } from "./read_encryption_key.ts";
export { RELAY_MODULE } from "./relay_module.ts";
export type { RelayModuleConfig, RelayContext } from "./relay_module.ts";
