// Stores on a journal in a temporary folder, reopened as a restart would.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ChangeSink, Journal } from "../../lib/storage/mod.ts";
import { journalSink } from "../../lib/storage/journal_sink.ts";

/** A store on a journal, and how to close it and open it again from the same files. */
export interface Journaled<S> {
  readonly store: S;
  readonly dir: string;
  close(): Promise<void>;
  /** Closes the journal and rebuilds the store from what it holds. */
  reopen(): Promise<Journaled<S>>;
}

/**
 * Opens a store on a journal in `dir` (a new temporary folder by default).
 * @param restore rebuilds the store from the journal, sending new changes to the sink
 * @param snapshot gives the store's whole state, for compactions
 * @param dir the folder
 * @param compactAboveBytes when to compact (small, to exercise it)
 */
export async function openJournaled<S, C>(
  restore: (snapshot: unknown, records: readonly unknown[], sink: ChangeSink<C>) => S,
  snapshot: (store: S) => unknown,
  dir = mkdtempSync(join(tmpdir(), "tributary-store-")),
  compactAboveBytes = 64 * 1024 * 1024,
): Promise<Journaled<S>> {
  const { journal, replay } = await Journal.open({ dir, name: "store", compactAboveBytes });
  const store: S = restore(
    replay.snapshot,
    replay.records,
    journalSink<C>(journal, () => snapshot(store)),
  );
  const opened: Journaled<S> = {
    store,
    dir,
    close: () => journal.close(),
    reopen: async () => {
      await journal.close();
      return openJournaled(restore, snapshot, dir, compactAboveBytes);
    },
  };
  return opened;
}

/**
 * Stores on journals, each reopened by the store itself, as the contract
 * suites' factories and `reopen` hooks take them.
 * @returns `open` (a store on a new journal, rebuilt by `restore`) and `reopen` (the same store after a restart)
 */
export function journaledStores<S extends { exportState(): unknown }, C>(): {
  open(
    restore: (snapshot: unknown, records: readonly unknown[], sink: ChangeSink<C>) => S,
    compactAboveBytes?: number,
  ): Promise<S>;
  reopen(store: object): Promise<S>;
} {
  const opened = new WeakMap<object, Journaled<S>>();
  const keep = (handle: Journaled<S>): S => {
    opened.set(handle.store, handle);
    return handle.store;
  };
  return {
    open: async (restore, compactAboveBytes) =>
      keep(
        await openJournaled<S, C>(
          restore,
          (store) => store.exportState(),
          undefined,
          compactAboveBytes,
        ),
      ),
    reopen: async (store) => keep(await opened.get(store)!.reopen()),
  };
}
