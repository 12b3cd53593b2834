import { createHash, type Hash } from "node:crypto";
import type { Scalar } from "../../odata/mod.ts";
import { codeArray, remapCodes } from "./_code_column.ts";
import type { BuiltColumn } from "./built_dataset.ts";

/**
 * A column's dictionary in a store being built: its values (code 0 is null),
 * a running hash of them, and their codes by value, made only once a dataset
 * needs its codes mapped (datasets whose codes are the dictionary's never
 * do). Datasets join it in dataset order, each adding the values new to it.
 */
export class StoreDictionary {
  readonly #values: Scalar[] = [];
  #codeOf: Map<Scalar, number> | undefined;
  readonly #hash: Hash = createHash("sha256");

  /** Creates a dictionary holding null alone. */
  constructor() {
    this.#appendValue(null);
  }

  /** The values, by code; the store's column takes this array as it is. */
  get values(): readonly Scalar[] {
    return this.#values;
  }

  /**
   * Joins a built dataset's text column to the dictionary: the dictionary
   * gets the dataset's new values (in the dataset's order), and the result's
   * codes are codes of the dictionary. Codes whose base is the dictionary as
   * it is are kept as they are; others are mapped.
   * @param column the dataset's column
   * @returns the column, its codes the dictionary's and its `base` the dictionary as it was
   */
  join(column: Extract<BuiltColumn, { kind: "dict" }>): BuiltColumn {
    const length = this.#values.length;
    const hash = this.#hash.copy().digest("hex");
    const { values, base } = column;
    if (
      base !== undefined && base.length === length && base.hash === hash &&
      this.#appendNew(values, base.codeOf)
    ) {
      return { ...column, base: { length, hash, codeOf: base.codeOf } };
    }
    const codeOf = new Uint32Array(values.length);
    const known = this.#codesByValue();
    for (let l = 1; l < values.length; l++) {
      const value = values[l] ?? null;
      codeOf[l] = known.get(value) ?? this.#appendValue(value);
    }
    // Codes of the base to codes of the store: through the value each has in `values`.
    let map = codeOf;
    if (base !== undefined) {
      let max = 0;
      for (let l = 0; l < base.codeOf.length; l++) max = Math.max(max, base.codeOf[l]!);
      map = new Uint32Array(max + 1);
      for (let l = 0; l < values.length; l++) map[base.codeOf[l]!] = codeOf[l]!;
    }
    const codes = codeArray(this.#values.length - 1, column.codes.length);
    let same = true;
    for (let code = 0; code < map.length && same; code++) same = map[code] === code;
    // The same codes (e.g. the first dataset's): copied, widened if need be.
    if (same) codes.set(column.codes);
    else remapCodes(codes, 0, column.codes, map);
    return { kind: "dict", values, codes, counts: column.counts, base: { length, hash, codeOf } };
  }

  #codesByValue(): Map<Scalar, number> {
    if (this.#codeOf === undefined) {
      this.#codeOf = new Map(this.#values.map((value, code) => [value, code]));
    }
    return this.#codeOf;
  }

  #appendValue(value: Scalar): number {
    const code = this.#values.length;
    this.#appendValues([value]);
    return code;
  }

  #appendValues(values: readonly Scalar[]): void {
    if (values.length === 0) return;
    const codeOf = this.#codeOf;
    for (const value of values) {
      const code = this.#values.push(value) - 1;
      codeOf?.set(value, code);
    }
    // One JSON text a value, each on its own line: the hash tells one sequence of values from any other.
    this.#hash.update(`${values.map((value) => JSON.stringify(value)).join("\n")}\n`);
  }

  /**
   * Appends a dataset's values new to the dictionary, when its base is the
   * dictionary (same length, same hash, so the same values): those whose code
   * is at least the dictionary's length, which must be the codes that follow
   * it, in order.
   * @returns false, changing nothing, when they are not
   */
  #appendNew(values: readonly Scalar[], codeOf: Uint32Array): boolean {
    const length = this.#values.length;
    if (codeOf.length !== values.length || codeOf[0] !== 0) return false;
    const added: Scalar[] = [];
    for (let l = 1; l < values.length; l++) {
      const code = codeOf[l]!;
      if (code < length) continue;
      if (code !== length + added.length) return false;
      added.push(values[l] ?? null);
    }
    this.#appendValues(added);
    return true;
  }
}
