/**
 * An error's message, or its causes' (a refused connection may say nothing
 * itself), on one line.
 * @param error anything thrown
 * @returns the description
 */
export function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(describeError).join("; ");
  }
  if (error instanceof Error) {
    return error.message !== ""
      ? error.message
      : String((error as NodeJS.ErrnoException).code ?? error.name);
  }
  return String(error);
}
