/**
 * A count and its noun, singular for one: `1 dataset`, `2 datasets`.
 * @param n the count
 * @param noun the noun for one
 * @param plural the noun for any other count
 * @returns e.g. `3 rows`
 * @example
 * ```ts
 * count(1, "command"); // "1 command"
 * count(2, "entry", "entries"); // "2 entries"
 * ```
 */
export function count(n: number, noun: string, plural = `${noun}s`): string {
  return `${n} ${n === 1 ? noun : plural}`;
}
