import { type ConfigOf, integerSetting } from "../config/mod.ts";

/** The sync API's settings, read by `readSettings` from the environment. */
export const SYNC_SETTINGS = {
  queueAboveObjects: integerSetting("SYNC_QUEUE_ABOVE_OBJECTS", {
    default: 1000,
    min: 0,
    max: 100_000_000,
    doc: "a snapshot or diff of more objects is answered 202 and computed in the background",
  }),
  maxQueuedPerUser: integerSetting("SYNC_MAX_QUEUED_PER_USER", {
    default: 16,
    min: 1,
    max: 100_000,
    doc: "queued snapshots, diffs and patches a user may have at once; more answer 429",
  }),
  revisionRetentionDays: integerSetting("REVISION_RETENTION_DAYS", {
    default: 30,
    min: 1,
    max: 36_500,
    doc:
      "a revision stays a diff base this long after it stopped being the head (the next change); then it is answered 410, for good",
  }),
  ticketRetentionSeconds: integerSetting("TICKET_RETENTION_SECONDS", {
    default: 600,
    min: 1,
    max: 7 * 24 * 3600,
    doc: "a ticket and its result are kept this long, then answered 410",
  }),
  streamHeartbeatMs: integerSetting("SYNC_STREAM_HEARTBEAT_MS", {
    default: 15_000,
    min: 1000,
    max: 50_000,
    doc:
      "a change stream with nothing to announce sends a comment (`: ping`) this often, so that proxies keep it open (below the 60 s idle limit of common proxies and of this server's TLS connections)",
  }),
  streamsPerUser: integerSetting("SYNC_STREAMS_PER_USER", {
    default: 8,
    min: 1,
    max: 10_000,
    doc:
      "change streams and long-polls a user may have open at once in one process; more answer 429",
  }),
  streamsMax: integerSetting("SYNC_STREAMS_MAX", {
    default: 10_000,
    min: 1,
    max: 1_000_000,
    doc:
      "change streams and long-polls one process holds open at most; more answer 503 with Retry-After",
  }),
} as const;

/** The sync API's configuration. */
export type SyncConfig = ConfigOf<typeof SYNC_SETTINGS>;
