/**
 * Request ids of one process: a random prefix (so that processes differ) and
 * a counter, e.g. `3f9a1c0e-1k`.
 * @param random random bytes
 * @returns what makes the next id
 */
export function requestIds(random: (size: number) => Uint8Array): () => string {
  const prefix = Array.from(random(4), (byte) => byte.toString(16).padStart(2, "0")).join("");
  let n = 0;
  return () => `${prefix}-${(++n).toString(36)}`;
}
