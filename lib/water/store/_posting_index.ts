import type { CodeArray, PostingIndex } from "../../columnar/mod.ts";
import { placeRows } from "./_code_column.ts";

/**
 * Builds a posting index by counting sort, O(rows): the rows per code are
 * known, so one pass over the codes places every row.
 * @param codes each row's code
 * @param counts rows per code
 * @param keys how many keys the index has
 * @param keyOf the key of each code; without it, each code is its own key
 * @returns the index
 */
export function buildPostingIndex(
  codes: CodeArray,
  counts: Uint32Array,
  keys: number,
  keyOf: Uint32Array | undefined,
): PostingIndex {
  const starts = new Uint32Array(keys + 1);
  for (let code = 0; code < counts.length; code++) {
    starts[(keyOf === undefined ? code : keyOf[code]!) + 1]! += counts[code]!;
  }
  for (let k = 0; k < keys; k++) starts[k + 1]! += starts[k]!;
  const fill = starts.slice(0, keys);
  const rows = new Uint32Array(codes.length);
  const keyOfCode = keyOf ?? Uint32Array.from(counts, (_, code) => code);
  placeRows(codes, keyOfCode, fill, rows);
  return { ...(keyOf === undefined ? {} : { keyOf }), starts, rows };
}
