/**
 * Runs a task every `ms` milliseconds on the real clock without keeping the
 * process alive for it; the default of the services' `every` option.
 * @param task what to run
 * @param ms the period
 * @returns a function that stops it
 */
export function startInterval(task: () => void, ms: number): () => void {
  const timer = setInterval(task, ms);
  timer.unref();
  return () => clearInterval(timer);
}
