/**
 * The sync client (`tributary/sync-client`): one user's sync context kept on
 * a device, for browsers, Node, Deno, Bun and React Native (it needs only
 * `fetch`). A local copy readable at once and observable; local writes
 * applied at once and kept in a durable outbox, sent as patches with their
 * base revision and an Idempotency-Key, never applied twice; conflicts
 * handed to a policy; tokens refreshed with rotation; retries with backoff.
 * Storages: memory, a folder (Node, Deno, Bun), IndexedDB (browsers).
 * @module
 */
export { createSyncClient } from "./create_sync_client.ts";
export type { SyncClient, SyncClientOptions, SyncOptions } from "./create_sync_client.ts";
export { localWins, merge, serverWins } from "./policies.ts";
export type { MergeFunction } from "./policies.ts";
export { pollChanges } from "./poll_changes.ts";
export type { PollChangesOptions } from "./poll_changes.ts";
export { streamChanges } from "./stream_changes.ts";
export type { StreamChangesOptions } from "./stream_changes.ts";
export { memoryStorage } from "./memory_storage.ts";
export { fileStorage } from "./file_storage.ts";
export type { FileStorageOptions, StorageFileHandle, StorageFileSystem } from "./file_storage.ts";
export { indexedDbStorage } from "./indexed_db_storage.ts";
export type {
  IdbDatabaseLike,
  IdbFactoryLike,
  IdbRequestLike,
  IdbStoreLike,
  IdbTransactionLike,
  IndexedDbStorageOptions,
} from "./indexed_db_storage.ts";
export { nextDelay, parseRetryAfter } from "./backoff.ts";
export type { BackoffOptions } from "./backoff.ts";
export { SyncClientError } from "./errors.ts";
export type { SyncClientErrorCode, SyncClientErrorOptions } from "./errors.ts";
export type {
  ChangesTransport,
  ConflictPolicy,
  Me,
  Message,
  OnlineSource,
  SyncClientEvent,
  SyncConflict,
  SyncEntities,
  SyncEntityName,
  SyncFieldValue,
  SyncInputs,
  SyncObjectError,
  SyncPhase,
  SyncStatus,
  SyncStorage,
  Team,
} from "./types.ts";
