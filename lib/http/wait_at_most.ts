/**
 * Waits for a promise, `ms` milliseconds at most, whichever comes first; a
 * rejection counts as done. The timer does not outlive the wait.
 * @param promise what to wait for
 * @param ms the longest wait
 * @returns whether the promise settled in time
 */
export async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true, () => true), limit]);
  } finally {
    clearTimeout(timer);
  }
}
