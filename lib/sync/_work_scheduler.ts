import { SyncError } from "./errors.ts";
import type { SubmitResult, TicketWork } from "./sync_store.ts";
import type { TicketData, TicketStatus, TicketUpdate } from "./ticket_store.ts";
import type { SyncData, SyncDiff, SyncPatch } from "./types.ts";

// The work/ticket scheduler both sync stores run (memory_sync_store.ts and
// postgres_sync_store.ts): an owner's queued tickets are run oldest first,
// in batches where the store can, one at a time after a failure so that the
// ticket at fault fails alone; each ticket's work is done and the ticket
// ended by the same rules (which status for which outcome). What is the
// store's own stays in the store: where tickets are kept and locked, how a
// patch is applied and how a ticket's end is written.

/** What a store does for {@linkcode runTicketWork}: one ticket's steps, on its own storage. */
export interface TicketSteps {
  /**
   * Checks and applies a queued patch; a revision it makes ends the ticket
   * `done` in the same durable step.
   * @returns the patch's errors, or the revision it made (undefined when it changed nothing)
   */
  applyPatch(patch: SyncPatch): Promise<SubmitResult>;
  /**
   * Every object at a revision, by id.
   * @throws {SyncError} when the revision is unknown or past the retention
   */
  snapshot(at: string): Promise<SyncData>;
  /**
   * What changed from one revision to another, by id.
   * @throws {SyncError} when either is unknown or past the retention
   */
  diff(base: string, to: string): Promise<SyncDiff | undefined>;
  /** Ends the ticket: its final status, with the patch's errors or the computed data. */
  end(status: TicketStatus, update: TicketUpdate): Promise<void>;
}

/**
 * Runs one queued ticket's work to its end. A patch is applied (its
 * revision ends the ticket `done` with it), or ends `aborted` with its
 * errors, or `done` when it changes nothing. A snapshot or diff ends `done`
 * with its data, or `failed` when its revisions are gone.
 * @param work what the ticket queued
 * @param steps the store's steps for this ticket
 * @throws what a step throws, except a snapshot's or diff's {@linkcode SyncError}
 */
export async function runTicketWork(work: TicketWork, steps: TicketSteps): Promise<void> {
  switch (work.kind) {
    case "patch": {
      const { errors, revision } = await steps.applyPatch(work.patch);
      // A revision made ended the ticket in the same step; otherwise it ends here.
      if (revision === undefined) {
        await steps.end(errors.length > 0 ? "aborted" : "done", { errors });
      }
      return;
    }
    case "snapshot":
    case "diff": {
      let data: TicketData | undefined;
      try {
        data = work.kind === "snapshot"
          ? await steps.snapshot(work.at)
          : await steps.diff(work.base, work.to);
      } catch (error) {
        if (!(error instanceof SyncError)) throw error;
        return await steps.end("failed", {});
      }
      return await steps.end("done", data === undefined ? {} : { data });
    }
  }
}

/** Options of {@linkcode drainOwnerQueue}. */
export interface DrainOptions {
  /** Tickets run together at most (one transaction, one commit), until a batch fails. */
  readonly batch: number;
  /**
   * Runs up to `limit` of the owner's oldest queued tickets.
   * @returns how many it ran: 0 when none is left, or another runner holds them
   */
  readonly run: (limit: number) => Promise<number>;
  /**
   * Whether work may be left after a batch; without it the next batch looks.
   * @default none
   */
  readonly more?: () => Promise<boolean>;
  /**
   * Whether a failure is the store's (it is away), not a ticket's: it is
   * thrown at once, never tried again one ticket at a time.
   * @default none: every failure is tried again alone
   */
  readonly isOutage?: (error: unknown) => boolean;
}

/**
 * Runs an owner's queue, oldest first, batch by batch until none is left.
 * After a failed batch of several tickets, the rest runs one ticket at a
 * time, so that the ticket at fault fails alone; a failure of a batch of one,
 * or an outage, is thrown.
 * @param options batch size, how to run a batch, how to look for more
 * @returns how many tickets ran
 */
export async function drainOwnerQueue(options: DrainOptions): Promise<number> {
  let count = 0;
  let batch = options.batch;
  for (;;) {
    let ran: number;
    try {
      ran = await options.run(batch);
    } catch (error) {
      if (batch === 1 || options.isOutage?.(error) === true) throw error;
      batch = 1;
      continue;
    }
    if (ran === 0) return count;
    count += ran;
    if (options.more !== undefined && !(await options.more())) return count;
  }
}
