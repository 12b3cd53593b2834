import { droppedTailNote, type Journal } from "./journal.ts";
import type { StateDir } from "./state_dir.ts";

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
export function journalSink<C>(
  journal: Journal,
  snapshot: () => unknown,
  onError: (error: unknown) => void = () => {},
): ChangeSink<C> {
  return {
    record(change: C): Promise<void> {
      const durable = journal.append(change);
      if (journal.shouldCompact()) journal.compact(snapshot).catch(onError);
      return durable;
    },
  };
}

/** Where {@linkcode openJournaledStore} reports a cut tail and a failed compaction (a `ServiceLog` is one). */
export interface JournalLog {
  info(message: string): void;
  /** A warning (a torn tail cut); `error` takes it when absent. */
  warn?(message: string): void;
  error(message: string, error?: unknown): void;
}

/**
 * Opens the journal `name` of a state folder and rebuilds a memory store
 * from it, its later changes going back to the journal: the cut tail of a
 * crash is reported, a failed compaction too (its logs are kept), and the
 * journal is closed again when the store cannot be rebuilt.
 * @param state the state folder
 * @param name the journal's name
 * @param restore rebuilds the store from the snapshot and the records after it, sending new changes to the sink
 * @param log where notes and failures go
 * @returns the store and its journal (close the journal after the store's last change)
 * @throws whatever `restore` throws, for a journal it cannot read
 * @example
 * ```ts
 * const { store, journal } = await openJournaledStore(state, "auth", (snapshot, records, sink) => MemoryAuthStore.restore(snapshot, records, { sink }), log);
 * ```
 */
export async function openJournaledStore<S extends { exportState(): unknown }, C>(
  state: StateDir,
  name: string,
  restore: (snapshot: unknown, records: readonly unknown[], sink: ChangeSink<C>) => S,
  log: JournalLog,
): Promise<{ store: S; journal: Journal }> {
  const { journal, replay } = await state.journal(name);
  if (replay.dropped !== undefined) {
    const note = droppedTailNote(name, replay.dropped);
    if (log.warn === undefined) log.error(note);
    else log.warn(note);
  }
  let store: S | undefined;
  try {
    const sink = journalSink<C>(
      journal,
      () => store!.exportState(),
      (error) => log.error(`State: cannot compact the ${name} journal (its logs are kept)`, error),
    );
    store = restore(replay.snapshot, replay.records, sink);
  } catch (error) {
    await journal.close();
    throw error;
  }
  return { store, journal };
}
