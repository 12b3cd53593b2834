// The message log of the queues that keep their jobs in process memory (the
// MemoryQueue, and the KafkaQueue's view of its state topic): each tenant's
// messages in log order, and the page a query asks for.
import {
  type Attempt,
  ATTEMPT_STATS_BUCKET_MS,
  ATTEMPT_STATS_RETENTION_MS,
  type AttemptBucket,
  type AttemptCounts,
  deliveryStatus,
  type JobView,
  type MessageCursor,
  type MessagePage,
  type MessageQuery,
} from "./queue.ts";

/** True when `a` comes before `b` in time: the log shows `b` first. */
function older(a: MessageCursor, b: MessageCursor): boolean {
  return a.createdAt < b.createdAt || (a.createdAt === b.createdAt && a.messageId < b.messageId);
}

/**
 * Each tenant's messages, oldest first, for reading newest first. A message
 * that goes is skipped by the reader (its jobs are gone) and removed in a
 * compaction once half of a tenant's keys are gone, so removing costs no
 * search.
 */
export class MessageLog {
  readonly #tenants = new Map<string, { keys: MessageCursor[]; gone: number }>();

  add(tenantId: string, key: MessageCursor): void {
    let tenant = this.#tenants.get(tenantId);
    if (tenant === undefined) this.#tenants.set(tenantId, tenant = { keys: [], gone: 0 });
    const keys = tenant.keys;
    // Messages come in time order, so the place is almost always the end.
    let at = keys.length;
    while (at > 0 && older(key, keys[at - 1]!)) at--;
    keys.splice(at, 0, key);
  }

  /**
   * Tells the log that a message of the tenant is gone.
   * @param live whether a message is still kept, for the compaction
   */
  drop(tenantId: string, live: (key: MessageCursor) => boolean): void {
    const tenant = this.#tenants.get(tenantId);
    if (tenant === undefined) return;
    if (++tenant.gone * 2 <= tenant.keys.length) return;
    tenant.keys = tenant.keys.filter(live);
    tenant.gone = 0;
    if (tenant.keys.length === 0) this.#tenants.delete(tenantId);
  }

  /** The tenant's keys in the query's range, newest first. */
  *newestFirst(tenantId: string, query: MessageQuery): Generator<MessageCursor> {
    const keys = this.#tenants.get(tenantId)?.keys ?? [];
    // The first key not before the bound, by binary search: everything before it is in range.
    // The earlier of the cursor and `until` (a key before {until, ""} is one made before until).
    let upper: MessageCursor | undefined = query.until === undefined
      ? undefined
      : { createdAt: query.until, messageId: "" };
    if (query.after !== undefined && (upper === undefined || older(query.after, upper))) {
      upper = query.after;
    }
    let low = 0;
    let high = keys.length;
    if (upper !== undefined) {
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (older(keys[middle]!, upper)) low = middle + 1;
        else high = middle;
      }
    }
    let previous: MessageCursor | undefined;
    for (let i = high - 1; i >= 0; i--) {
      const key = keys[i]!;
      if (query.since !== undefined && key.createdAt < query.since) return;
      if (query.until !== undefined && key.createdAt >= query.until) continue;
      // A message that went and came back (its id used again) has two keys: one is shown.
      if (
        previous !== undefined && previous.createdAt === key.createdAt &&
        previous.messageId === key.messageId
      ) continue;
      previous = key;
      yield key;
    }
  }
}

/**
 * The jobs of a message as a query shows them: those of its endpoint (all
 * when it names none); undefined when the message does not match.
 * @param jobs the message's jobs, at least one
 * @param query the filters
 */
export function shownJobs(jobs: readonly JobView[], query: MessageQuery): JobView[] | undefined {
  const shown = query.endpointId === undefined
    ? [...jobs]
    : jobs.filter((job) => job.endpointId === query.endpointId);
  if (shown.length === 0) return undefined;
  if (query.event !== undefined && shown[0]!.event !== query.event) return undefined;
  if (
    query.status !== undefined && !shown.some((job) => deliveryStatus(job.state) === query.status)
  ) return undefined;
  return shown;
}

/**
 * Reads a page of the log.
 * @param keys the tenant's keys in range, newest first
 * @param query the limit and filters
 * @param jobsOf a message's jobs of the tenant; empty when it is gone
 */
export async function readPage(
  keys: Iterable<MessageCursor>,
  query: MessageQuery,
  jobsOf: (key: MessageCursor) => readonly JobView[] | Promise<readonly JobView[]>,
): Promise<MessagePage> {
  const messages: JobView[][] = [];
  let last: MessageCursor | undefined;
  for (const key of keys) {
    const jobs = await jobsOf(key);
    // Gone, or a message of the same id made at another time.
    if (jobs.length === 0 || jobs[0]!.createdAt !== key.createdAt) continue;
    const shown = shownJobs(jobs, query);
    if (shown === undefined) continue;
    // One more match than the page holds: there is a next page.
    if (messages.length === query.limit) return { messages, next: last! };
    messages.push(shown);
    last = key;
  }
  return { messages };
}

/** Attempt counts by tenant, endpoint and bucket, kept in process memory. */
export class AttemptStats {
  /** By `<tenant>\n<endpoint>`, then by bucket: [attempts, successes]. */
  readonly #counts = new Map<string, Map<number, [number, number]>>();

  /** Counts one attempt. */
  count(tenantId: string, endpointId: string, attempt: Attempt): void {
    this.#add(tenantId, endpointId, bucketOf(attempt.at), 1, attempt.outcome === "success" ? 1 : 0);
  }

  /** Takes in a bucket, e.g. from a snapshot. */
  restore(bucket: AttemptBucket): void {
    this.#add(bucket.tenantId, bucket.endpointId, bucket.bucket, bucket.attempts, bucket.successes);
  }

  /** A tenant's counts since a time (rounded down to its bucket), by endpoint id. */
  totals(tenantId: string, since: number): AttemptCounts[] {
    const from = bucketOf(since);
    const totals: AttemptCounts[] = [];
    for (const [key, buckets] of this.#counts) {
      const cut = key.indexOf("\n");
      if (key.slice(0, cut) !== tenantId) continue;
      let attempts = 0;
      let successes = 0;
      for (const [bucket, [made, succeeded]] of buckets) {
        if (bucket < from) continue;
        attempts += made;
        successes += succeeded;
      }
      if (attempts > 0) totals.push({ endpointId: key.slice(cut + 1), attempts, successes });
    }
    return totals.sort((
      a,
      b,
    ) => (a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0));
  }

  /** Drops the buckets past their retention. */
  sweep(now: number): void {
    const oldest = bucketOf(now - ATTEMPT_STATS_RETENTION_MS);
    for (const [key, buckets] of this.#counts) {
      for (const bucket of buckets.keys()) if (bucket < oldest) buckets.delete(bucket);
      if (buckets.size === 0) this.#counts.delete(key);
    }
  }

  /** Every bucket, for a snapshot. */
  buckets(): AttemptBucket[] {
    const all: AttemptBucket[] = [];
    for (const [key, buckets] of this.#counts) {
      const cut = key.indexOf("\n");
      for (const [bucket, [attempts, successes]] of buckets) {
        all.push({
          tenantId: key.slice(0, cut),
          endpointId: key.slice(cut + 1),
          bucket,
          attempts,
          successes,
        });
      }
    }
    return all;
  }

  #add(
    tenantId: string,
    endpointId: string,
    bucket: number,
    attempts: number,
    successes: number,
  ): void {
    const key = `${tenantId}\n${endpointId}`;
    let buckets = this.#counts.get(key);
    if (buckets === undefined) this.#counts.set(key, buckets = new Map());
    const counts = buckets.get(bucket);
    if (counts === undefined) buckets.set(bucket, [attempts, successes]);
    else {
      counts[0] += attempts;
      counts[1] += successes;
    }
  }
}

/**
 * The start of the bucket a time falls in.
 * @param at milliseconds since the epoch
 */
export function bucketOf(at: number): number {
  return Math.floor(at / ATTEMPT_STATS_BUCKET_MS) * ATTEMPT_STATS_BUCKET_MS;
}
