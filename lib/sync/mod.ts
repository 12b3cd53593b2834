/**
 * Sync of a user context. The pure core: the entity schema, a revision log
 * whose diffs cost the changes since their base (not the history or the
 * data), snapshots, patches (structural parsing, rule checks, atomic
 * application), applying a diff as a client does, and tickets for queued
 * requests; time and ids are passed in. At the edge: the `SyncStore` port
 * with its in-memory implementation, a serial job queue, and the routes.
 * @module
 */
export { applyDiff } from "./apply_diff.ts";
export { createSyncService } from "./create_sync_service.ts";
export type { SyncServiceOptions } from "./create_sync_service.ts";
export { MemorySyncStore } from "./memory_sync_store.ts";
export type { MemorySyncStoreOptions, SyncChange, SyncSnapshot } from "./memory_sync_store.ts";
export { SerialJobs } from "./serial_jobs.ts";
export type { SerialJobsOptions } from "./serial_jobs.ts";
export type { Idempotency, SubmitResult, SyncStore, SyncUser, TicketWork } from "./sync_store.ts";
export { applyPatch } from "./apply_patch.ts";
export { checkPatch } from "./check_patch.ts";
export type { PatchUser } from "./check_patch.ts";
export { SyncError } from "./errors.ts";
export type { PatchFieldError, SyncErrorCode, SyncErrorOptions } from "./errors.ts";
export { SYNC_ERROR_STATUS } from "./error_status.ts";
export { parsePatch } from "./parse_patch.ts";
export type { ParsePatchOptions } from "./parse_patch.ts";
export { RevisionLog } from "./revision_log.ts";
export type {
  EntityIndex,
  ObjectView,
  RevisionLogOptions,
  RevisionLogState,
  RevisionStatus,
} from "./revision_log.ts";
export { ENTITIES, ENTITY_NAMES } from "./schema.ts";
export type { EntitySchema, FieldSchema, SyncFieldType } from "./schema.ts";
export { TicketStore } from "./ticket_store.ts";
export type {
  Ticket,
  TicketData,
  TicketResult,
  TicketStatus,
  TicketStoreOptions,
  TicketStoreState,
  TicketUpdate,
} from "./ticket_store.ts";
export type {
  Change,
  EntityName,
  ErrorLevel,
  ErrorMessage,
  ErrorMessageCode,
  FieldValue,
  ObjectErrors,
  Revision,
  SyncData,
  SyncDeletedObjects,
  SyncDiff,
  SyncObject,
  SyncObjects,
  SyncPatch,
} from "./types.ts";
export { SYNC_SETTINGS } from "./settings.ts";
export type { SyncConfig } from "./settings.ts";
export { startSyncService } from "./start_sync_service.ts";
export type { StartSyncServiceOptions } from "./start_sync_service.ts";
export { PostgresSyncStore } from "./postgres_sync_store.ts";
export type { PostgresSyncStoreOptions } from "./postgres_sync_store.ts";
export type { RevisionFeed, RevisionListener } from "./revision_feed.ts";
export { MemoryRevisionFeed } from "./memory_revision_feed.ts";
export { PostgresRevisionFeed, REVISION_CHANNEL } from "./postgres_revision_feed.ts";
export { revisionEvent, RevisionStreams, Watcher } from "./revision_streams.ts";
export type { RevisionStreamsOptions, StillAllowed } from "./revision_streams.ts";
export { MAX_WAIT_SECONDS } from "./create_sync_service.ts";
