import type { DatasetIds } from "../store/built_dataset.ts";
import type { DatasetInput, DatasetLoadResult, LoadIssue } from "../store/dataset_reader.ts";

/** A dataset folder as a load finds it, before its data is read. */
export interface FoundDataset {
  readonly folder: string;
  /** The path of its `data.csv`, for reports. */
  readonly dataFile: string;
  /**
   * What tells this version of the folder's files from another: equal
   * fingerprints mean the dataset is unchanged (see `loadDatasets`).
   */
  readonly fingerprint: string;
  /** `CreateTimestamp` in milliseconds since the epoch; `Infinity` when there is none. */
  readonly created: number;
  /** Its checked metadata, or why it cannot be loaded. */
  readonly metadata: { readonly input: DatasetInput } | { readonly failure: LoadIssue };
}

/** How a dataset came to be in a store, compared with the store before. */
export type DatasetChange =
  /** New: no dataset of its folder was served. */
  | "added"
  /** A new version of a folder's dataset, with new ids. */
  | "replaced"
  /** The same files as before: the same rows under the same ids. */
  | "unchanged"
  /** Its new version is broken, so the version served before is kept, ids and all. */
  | "kept";

/** What loading one dataset folder produced. */
export interface DatasetReport extends DatasetLoadResult {
  readonly folder: string;
  readonly doi: string;
}

/** A dataset as a store serves it: what the next reload compares the folder with. */
export interface ServedDataset {
  readonly folder: string;
  readonly fingerprint: string;
  readonly id: string;
  readonly doi: string;
  /** Where its ids start. */
  readonly ids: DatasetIds;
  /** What its load produced. */
  readonly report: DatasetReport;
}

/** One dataset of the next store, in id order. */
export type ReloadStep =
  /** A dataset of the store before, taken over as it is, ids and all. */
  | { readonly kind: "copy"; readonly served: number; readonly change: "unchanged" | "kept" }
  /** A dataset read from its files, with new ids; `replaces` is the served dataset of its folder. */
  | {
    readonly kind: "load";
    readonly found: FoundDataset;
    readonly input: DatasetInput;
    readonly change: "added" | "replaced";
    readonly replaces?: number;
  };

/** A dataset folder that cannot be loaded. */
export interface ReloadFailure extends LoadIssue {
  readonly folder: string;
  /** Whether the version served before keeps serving. */
  readonly kept: boolean;
}

/** What a reload does. */
export interface ReloadPlan {
  /** The next store's datasets, in id order: those kept first, in their order, then those read, in `CreateTimestamp` then folder order. */
  readonly steps: readonly ReloadStep[];
  /** Served datasets whose folder is gone, by index. */
  readonly removed: readonly number[];
  readonly failures: readonly ReloadFailure[];
}

/**
 * Decides what a reload of a datasets folder does, from what is served and
 * what the folder holds now, by folder name: a folder whose fingerprint is
 * unchanged is taken over (same rows, same ids); a new or changed one is
 * read, with ids after every id handed out before; a folder that is gone
 * is removed; a folder that cannot be loaded is reported, and the version
 * served before, if any, is kept. Two datasets may not share a DOI or an
 * Id: those kept come first, then those read in `CreateTimestamp` then
 * folder order, and a later one that clashes with an earlier one is
 * refused. With nothing served, this is a first load: every folder is read,
 * in that order.
 * @param served the datasets served now, in id order
 * @param found the folders found now
 * @returns the plan
 * @example
 * ```ts
 * const plan = planReload([], found); // a first load
 * ```
 */
export function planReload(
  served: readonly ServedDataset[],
  found: readonly FoundDataset[],
): ReloadPlan {
  const servedByFolder = new Map(served.map((dataset, index) => [dataset.folder, index]));
  const foundFolders = new Set(found.map((dataset) => dataset.folder));
  const removed = served.flatMap((
    dataset,
    index,
  ) => (foundFolders.has(dataset.folder) ? [] : [index]));
  const copies = new Map<number, "unchanged" | "kept">();
  const failures: ReloadFailure[] = [];
  const reads: { found: FoundDataset; input: DatasetInput; replaces: number | undefined }[] = [];
  for (const dataset of found) {
    const before = servedByFolder.get(dataset.folder);
    if (before !== undefined && served[before]!.fingerprint === dataset.fingerprint) {
      copies.set(before, "unchanged");
    } else if ("failure" in dataset.metadata) {
      if (before !== undefined) copies.set(before, "kept");
      failures.push({
        ...dataset.metadata.failure,
        folder: dataset.folder,
        kept: before !== undefined,
      });
    } else {
      reads.push({ found: dataset, input: dataset.metadata.input, replaces: before });
    }
  }
  reads.sort((a, b) =>
    a.found.created - b.found.created || compare(a.found.folder, b.found.folder)
  );
  // A read refused for a clash keeps the version before, which may clash with another read: go again until none does.
  const refused = new Set<number>();
  for (let settled = false; !settled;) {
    settled = true;
    const doiTaken = new Set<string>();
    const idTaken = new Set<string>();
    for (const index of copies.keys()) {
      doiTaken.add(served[index]!.doi);
      idTaken.add(served[index]!.id);
    }
    reads.forEach((read, i) => {
      if (refused.has(i)) return;
      if (doiTaken.has(read.input.doi) || idTaken.has(read.input.id)) {
        refused.add(i);
        settled = false;
        if (read.replaces !== undefined) copies.set(read.replaces, "kept");
        failures.push({
          file: read.found.dataFile,
          line: 0,
          column: 0,
          message:
            `Cannot load dataset ${read.found.folder}: its DOI or Id is already used by another dataset`,
          folder: read.found.folder,
          kept: read.replaces !== undefined,
        });
        return;
      }
      doiTaken.add(read.input.doi);
      idTaken.add(read.input.id);
    });
  }
  const steps: ReloadStep[] = [...copies.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([index, change]) => ({ kind: "copy", served: index, change }));
  reads.forEach((read, i) => {
    if (refused.has(i)) return;
    steps.push({
      kind: "load",
      found: read.found,
      input: read.input,
      ...(read.replaces === undefined
        ? { change: "added" }
        : { change: "replaced", replaces: read.replaces }),
    });
  });
  return { steps, removed, failures };
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
