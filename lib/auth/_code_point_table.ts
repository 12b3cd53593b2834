import type { RunTable } from "./_precis_table.ts";

/** Code points there are: U+0000 to U+10FFFF. */
const CODE_POINTS = 0x110000;

/**
 * A {@linkcode RunTable} decoded for look-ups: the value of any code point,
 * found by binary search over the starts of the runs.
 */
export class CodePointTable {
  readonly #starts: Uint32Array;
  readonly #indexes: Uint16Array;
  readonly #values: readonly string[];

  /**
   * Decodes a table.
   * @param table the runs, as scripts/precis_table.ts writes them
   * @throws {RangeError} when the runs do not cover every code point once, or name a value not in the table
   */
  constructor(table: RunTable) {
    const runs = table.runs.join("").match(/[0-9a-z]+[A-Z]+/g) ?? [];
    this.#starts = new Uint32Array(runs.length);
    this.#indexes = new Uint16Array(runs.length);
    this.#values = table.values;
    let start = 0;
    for (const [i, run] of runs.entries()) {
      const split = run.search(/[A-Z]/);
      let index = 0;
      for (const letter of run.slice(split)) index = index * 26 + letter.charCodeAt(0) - 64;
      if (index > table.values.length) {
        throw new RangeError(
          `Cannot decode a code point table: run ${i} names value ${
            index - 1
          } of ${table.values.length}`,
        );
      }
      this.#starts[i] = start;
      this.#indexes[i] = index - 1;
      start += parseInt(run.slice(0, split), 36);
    }
    if (start !== CODE_POINTS) {
      throw new RangeError(
        `Cannot decode a code point table: its runs cover ${start} code points, not ${CODE_POINTS}`,
      );
    }
  }

  /**
   * The value of a code point.
   * @param codePoint from 0 to 0x10FFFF
   * @returns its value
   */
  get(codePoint: number): string {
    let low = 0;
    let high = this.#starts.length - 1;
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.#starts[middle]! <= codePoint) low = middle;
      else high = middle - 1;
    }
    return this.#values[this.#indexes[low]!]!;
  }
}
