import type { Journal } from "./journal.ts";

/** Where a store sends its changes to make them durable. */
export interface ChangeSink<C> {
  /**
   * Records a change the store has just applied in memory.
   * @param change the change
   * @returns a promise resolved once it is durable
   */
  record(change: C): Promise<void>;
}

/**
 * A sink that appends each change to a journal and compacts the journal into
 * a snapshot of the store when its logs have grown past their bound. The
 * store must apply a change in memory in the same synchronous step as it
 * records it, so that `snapshot()` always holds every change recorded so far.
 * @param journal the journal
 * @param snapshot gives the store's whole state
 * @param onError where a failed compaction is reported (the logs are kept, so nothing is lost)
 * @returns the sink
 * @example
 * ```ts
 * const { journal, replay } = await state.journal("auth");
 * let store: MemoryAuthStore;
 * store = MemoryAuthStore.restore(replay.snapshot, replay.records, { sink: journalSink(journal, () => store.exportState()) });
 * ```
 */
export function journalSink<C>(journal: Journal, snapshot: () => unknown, onError: (error: unknown) => void = () => {}): ChangeSink<C> {
  return {
    record(change: C): Promise<void> {
      const durable = journal.append(change);
      if (journal.shouldCompact()) journal.compact(snapshot).catch(onError);
      return durable;
    },
  };
}
