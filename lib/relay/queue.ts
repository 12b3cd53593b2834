/** How one delivery attempt ended. */
export type AttemptOutcome =
  /** A 2xx answer. */
  | "success"
  /** Any other answer, a refused or broken connection. */
  | "failure"
  /** No answer within the delivery timeout. */
  | "timeout"
  /** The address policy refused the target (SSRF guard). */
  | "blocked"
  /** 410 Gone: the endpoint is disabled. */
  | "gone"
  /** 429 or 503: the receiver asked us to slow down. */
  | "throttled";

/** One delivery attempt, as recorded on its job. */
export interface Attempt {
  /** When it started, milliseconds since the epoch. */
  readonly at: number;
  readonly outcome: AttemptOutcome;
  /** The receiver's status; null when there was none (timeout, connection error, blocked). */
  readonly status: number | null;
  /** Milliseconds from sending to the answer (or the failure). */
  readonly latencyMs: number;
  /** What went wrong, in words; null on success. */
  readonly error: string | null;
}

/** Where a job is. */
export type JobState = "ready" | "delayed" | "leased" | "delivered" | "dead";

/** One message to one endpoint: what the queue holds and the worker delivers. */
export interface Job {
  /** Unique per message and endpoint: `<messageId>.<endpointId>`. */
  readonly id: string;
  /** The message id, sent as `webhook-id` on every attempt to every endpoint. */
  readonly messageId: string;
  readonly tenantId: string;
  readonly endpointId: string;
  readonly event: string;
  /** The exact body to send: the JSON payload, or its encrypted envelope when the endpoint encrypts. */
  readonly body: string;
  /** `application/json` (jobs queued before encrypted envelopes may hold `application/jose`). */
  readonly contentType: string;
  /** When the message was accepted, milliseconds since the epoch. */
  readonly createdAt: number;
  /** When the job is next due. */
  readonly dueAt: number;
  /** Attempts made so far, oldest first. */
  readonly attempts: readonly Attempt[];
}

/** A job and where it is, as the status and dead-letter APIs show it. */
export interface JobView extends Job {
  readonly state: JobState;
  /** Why a dead job died, e.g. its attempts ran out. */
  readonly reason?: string;
}

/** Why and when a job goes to the dead letters. */
export interface Death {
  /** The last attempt, when there was one. */
  readonly attempt?: Attempt;
  readonly reason: string;
  readonly at: number;
}

/** A claimed job: the worker holds it until the lease expires. */
export interface Lease {
  readonly job: Job;
  /** Proves the claim: a lease that expired and was claimed again no longer counts. */
  readonly token: string;
  readonly expiresAt: number;
}

/** The answer given to an `Idempotency-Key`, kept to give it again. */
export interface IdempotentAnswer {
  /** SHA-256 (hex) of the request body the key was first used with. */
  readonly bodyHash: string;
  /** The message the first request made. */
  readonly messageId: string;
  /** The response body given then. */
  readonly response: string;
}

/** One intake request's jobs, accepted together or not at all. */
export interface EnqueueBatch {
  readonly tenantId: string;
  /** Unique over all tenants: intake makes it from random bytes. */
  readonly messageId: string;
  readonly jobs: readonly Job[];
  /** With a key, the answer is kept so that the same key gives it again. */
  readonly idempotency?: {
    readonly key: string;
    readonly answer: IdempotentAnswer;
    readonly expiresAt: number;
  };
}

/** What {@linkcode QueueLifecycle.enqueue} did. */
export type EnqueueResult =
  | { readonly accepted: true }
  /** The key was used before: nothing was queued; here is the first answer. */
  | { readonly accepted: false; readonly previous: IdempotentAnswer };

/** Jobs by state. */
export interface QueueDepth {
  /** Due now, waiting for a worker. */
  readonly ready: number;
  /** Waiting for a retry time. */
  readonly delayed: number;
  /** Held by a worker. */
  readonly leased: number;
  /** Exhausted, kept for replay. */
  readonly dead: number;
}

/** Options of {@linkcode QueueLifecycle.claim}. */
export interface ClaimOptions {
  readonly now: number;
  /** At most this many jobs. */
  readonly limit: number;
  /** How long the claim holds; longer than a delivery can take. */
  readonly leaseMs: number;
  /**
   * At most this many jobs of one endpoint in this claim.
   * @default {limit}
   */
  readonly perEndpoint?: number;
  /**
   * Lower limits for some endpoints, by {@linkcode endpointKey}: e.g. 0 for
   * one the worker already delivers to at its cap, or one out of rate tokens.
   * Their jobs stay ready for a later claim.
   */
  readonly endpointLimits?: ReadonlyMap<string, number>;
}

/**
 * The key of an endpoint in {@linkcode ClaimOptions.endpointLimits}.
 * @param tenantId the endpoint's tenant
 * @param endpointId the endpoint
 * @returns one string for the pair
 */
export function endpointKey(tenantId: string, endpointId: string): string {
  return `${tenantId}\n${endpointId}`;
}

/** Options of {@linkcode QueueInspection.deadLetters}. */
export interface DeadLetterQuery {
  /** At most this many, newest first. */
  readonly limit: number;
  /** Only jobs of this endpoint. */
  readonly endpointId?: string;
}

/** Where one delivery of a message is, as the message log filters it. */
export type DeliveryStatus =
  /** Waiting for its first or next attempt, or being attempted: ready, delayed or leased. */
  | "pending"
  | "delivered"
  /** Its attempts ran out (or it could not be sent): a dead letter. */
  | "dead";

/**
 * The delivery status of a job state.
 * @param state where the job is
 * @returns `pending`, `delivered` or `dead`
 */
export function deliveryStatus(state: JobState): DeliveryStatus {
  return state === "delivered" || state === "dead" ? state : "pending";
}

/** A place in a tenant's message log, which runs newest first: by creation time, then by message id. */
export interface MessageCursor {
  readonly createdAt: number;
  readonly messageId: string;
}

/** Options of {@linkcode QueueInspection.messages}: which messages, and where the page starts. */
export interface MessageQuery {
  /** At most this many messages. */
  readonly limit: number;
  /** Only messages of this event type. */
  readonly event?: string;
  /** Only messages with a delivery in this status (of the endpoint, when one is given). */
  readonly status?: DeliveryStatus;
  /** Only messages to this endpoint; their other endpoints' deliveries are left out. */
  readonly endpointId?: string;
  /** Only messages created at or after this time, milliseconds since the epoch. */
  readonly since?: number;
  /** Only messages created before this time. */
  readonly until?: number;
  /** Only messages after this place in the log: the `next` of the page before. */
  readonly after?: MessageCursor;
}

/** One page of a tenant's message log. */
export interface MessagePage {
  /** Each message's jobs (one per endpoint), newest message first; a page may hold fewer than the limit. */
  readonly messages: readonly (readonly JobView[])[];
  /** Where the next page starts; absent once the log has no more messages for the query. */
  readonly next?: MessageCursor;
}

/** Attempts of one endpoint over a time, from {@linkcode QueueInspection.attemptStats}. */
export interface AttemptCounts {
  readonly endpointId: string;
  /** Attempts made, whatever their outcome. */
  readonly attempts: number;
  /** Attempts that were answered 2xx. */
  readonly successes: number;
}

/** One endpoint's attempts in one bucket of time, as a snapshot keeps them. */
export interface AttemptBucket {
  readonly tenantId: string;
  readonly endpointId: string;
  /** The bucket's start, a multiple of {@linkcode ATTEMPT_STATS_BUCKET_MS}. */
  readonly bucket: number;
  readonly attempts: number;
  readonly successes: number;
}

/** Attempts are counted in buckets of this many milliseconds (5 minutes). */
export const ATTEMPT_STATS_BUCKET_MS = 300_000;

/** Attempt counts are kept this long (24 hours), then swept. */
export const ATTEMPT_STATS_RETENTION_MS = 86_400_000;

/**
 * The lifecycle half of the relay's queue port: what moves a job from
 * intake to its end (queued, claimed, leased, retried, released, delivered
 * or dead, replayed, forgotten past its retention). Every method that moves
 * a job takes the lease that claimed it and returns false, doing nothing,
 * when that lease is no longer the job's (it expired and the job was claimed
 * again): at-least-once, never a job moved twice. The worker
 * ({@linkcode RelayWorker}) needs this half only.
 */
export interface QueueLifecycle {
  /**
   * Queues a batch whole, or nothing when its idempotency key was used.
   * @throws {RelayError} `ERR_RELAY_QUEUE_FULL` when the batch does not fit,
   * `ERR_RELAY_QUEUE_UNAVAILABLE` when the backend cannot take it
   */
  enqueue(batch: EnqueueBatch): Promise<EnqueueResult>;
  /**
   * Claims due jobs; expired leases are due again. Endpoints take turns, one
   * job each, so that one endpoint's backlog never holds back another's jobs;
   * each endpoint's jobs come earliest due first.
   */
  claim(options: ClaimOptions): Promise<Lease[]>;
  /**
   * Extends the leases still held to `expiresAt`: the worker's heartbeat
   * while their deliveries run, so that leases can be short and a dead
   * process's jobs come back soon.
   * @returns the leases still held, with their new expiry; one that is no longer the job's is left out
   */
  renew(leases: readonly Lease[], expiresAt: number): Promise<Lease[]>;
  /** Records the successful attempt; the job is delivered. */
  ack(lease: Lease, attempt: Attempt): Promise<boolean>;
  /** Records a failed attempt; the job waits until `dueAt`. */
  retry(lease: Lease, attempt: Attempt, dueAt: number): Promise<boolean>;
  /** Puts a job back untried (its endpoint was busy): no attempt is recorded. */
  release(lease: Lease, dueAt: number): Promise<boolean>;
  /** Records the last attempt (if any) and moves the job to the dead letters. */
  bury(lease: Lease, death: Death): Promise<boolean>;
  /**
   * Queues dead jobs of a tenant again, due at `now`, their attempts kept:
   * one by id, or all of them (of one endpoint when given).
   * @returns how many were queued
   */
  replay(
    tenantId: string,
    target: { readonly jobId: string } | { readonly endpointId?: string },
    now: number,
  ): Promise<number>;
  /**
   * When the earliest job that is not ready yet (a retry, or a lease that may
   * expire) is due; undefined when there is none. Ready jobs are for `claim`.
   */
  nextDue(): Promise<number | undefined>;
  /** Forgets delivered jobs, dead letters, idempotency keys and attempt counts past their retention. */
  sweep(now: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * The inspection half of the relay's queue port: what shows jobs without
 * moving them (a message's jobs, the message log, dead letters, attempt
 * counts, depth by state), for the status and dead-letter APIs and the
 * queue-depth gauge.
 */
export interface QueueInspection {
  /** A tenant's dead jobs, newest first. */
  deadLetters(tenantId: string, query: DeadLetterQuery): Promise<JobView[]>;
  /** A message's jobs, one per endpoint; empty when unknown or not the tenant's. */
  message(tenantId: string, messageId: string): Promise<JobView[]>;
  /**
   * A page of a tenant's message log: the messages the queue keeps (those
   * not yet delivered, delivered ones and dead letters within their
   * retention), newest first, each with its jobs and their attempts.
   * Following `next` from page to page gives every matching message once.
   */
  messages(tenantId: string, query: MessageQuery): Promise<MessagePage>;
  /**
   * How many attempts each of a tenant's endpoints made since a time, and how
   * many succeeded: counted as they are recorded (ack, retry, bury), in
   * buckets of {@linkcode ATTEMPT_STATS_BUCKET_MS} kept for
   * {@linkcode ATTEMPT_STATS_RETENTION_MS}. Shared by every process on the
   * backend, like the jobs.
   * @param tenantId the tenant
   * @param since the start, rounded down to its bucket
   * @returns the endpoints with attempts since then, by endpoint id
   */
  attemptStats(tenantId: string, since: number): Promise<AttemptCounts[]>;
  depth(now: number): Promise<QueueDepth>;
}

/**
 * The relay's queue port: memory, Redis and Kafka implement it, and one
 * contract suite (test/_contracts/job_queue.ts) holds them to it. It is the
 * two halves together, {@linkcode QueueLifecycle} (moving jobs) and
 * {@linkcode QueueInspection} (showing them); each consumer is typed with
 * what it uses:
 * - {@linkcode RelayWorker} (`RelayWorkerOptions.queue`): the lifecycle only
 *   (claim, renew, ack, retry, release, bury, nextDue);
 * - `createRelayService` (`RelayServiceOptions.queue`): both, enqueue and
 *   replay with the message log, messages, dead letters and attempt counts;
 * - `startRelayService` (the queue it opens): both, sweep and close with
 *   the depth gauge, and it hands the queue to the worker and the routes.
 */
export interface JobQueue extends QueueLifecycle, QueueInspection {}
