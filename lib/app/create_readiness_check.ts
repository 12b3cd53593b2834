import type { ReadinessProbe } from "../http/mod.ts";

/** A service's backends, as the app asks them. */
export interface ReadinessSource {
  /** The service, as `SERVICES` and the metrics name it, e.g. `relay`. */
  readonly service: string;
  readonly probes: readonly ReadinessProbe[];
}

/** A backend that does not answer, with the service that needs it and why. */
export interface ReadinessProblem {
  readonly service: string;
  /** The probe's part, e.g. `queue: Redis at redis://127.0.0.1:6379`. */
  readonly part: string;
  /** Why, on one line, e.g. `connect ECONNREFUSED 127.0.0.1:6379`. */
  readonly reason: string;
}

/** The answer of one round of probes. */
export interface ReadinessReport {
  /** Whether every probe answered. */
  readonly ready: boolean;
  /** The probes that did not, in the order of the sources and their probes. */
  readonly problems: readonly ReadinessProblem[];
}

/** Options of {@linkcode createReadinessCheck}. */
export interface ReadinessCheckOptions {
  /** Monotonic clock in milliseconds, e.g. `() => performance.now()`. */
  readonly now: () => number;
  /**
   * How long a probe may take before it counts as failing, milliseconds.
   * @default {1000}
   */
  readonly timeoutMs?: number;
  /**
   * How long a round's report answers every later call, milliseconds, so
   * that an orchestrator or a crowd polling readiness asks the backends at
   * most this often.
   * @default {250}
   */
  readonly reuseMs?: number;
  /**
   * Runs a task once after `ms`; returns a cancel function.
   * @default real timers that do not keep the process alive
   */
  readonly setTimer?: (task: () => void, ms: number) => () => void;
}

/**
 * Composes services' readiness probes into one check: every probe asked at
 * once, each given `timeoutMs` (one still out by then is reported as not
 * answering in time), their failures listed with their service. Checks never
 * pile up: calls made while a round runs share it, a round's report is kept
 * for `reuseMs`, and a probe still out from an earlier round is waited for
 * again (within the new round's time) rather than asked a second time.
 * @param sources the services' probes
 * @param options the clock, the time a probe gets and how long a report is kept
 * @returns the check; it never rejects
 * @example
 * ```ts
 * const check = createReadinessCheck([{ service: "relay", probes: relay.readiness ?? [] }], { now: () => performance.now() });
 * const { ready, problems } = await check();
 * ```
 */
export function createReadinessCheck(
  sources: readonly ReadinessSource[],
  options: ReadinessCheckOptions,
): () => Promise<ReadinessReport> {
  const timeoutMs = options.timeoutMs ?? 1000;
  const reuseMs = options.reuseMs ?? 250;
  const setTimer = options.setTimer ?? realTimer;
  const probes = sources.flatMap((source) =>
    source.probes.map((probe) => ({ service: source.service, probe }))
  );
  /** Probes asked and not settled yet, by their index in `probes`. */
  const out = new Map<number, Promise<void>>();
  let round: Promise<ReadinessReport> | undefined;
  let last: { readonly at: number; readonly report: ReadinessReport } | undefined;

  function ask(index: number): Promise<string | undefined> {
    let call = out.get(index);
    if (call === undefined) {
      const { probe } = probes[index]!;
      // A probe that throws rather than rejects fails the same way.
      const asked = Promise.resolve().then(() => probe.check());
      call = asked;
      out.set(index, asked);
      const settled = (): void => {
        if (out.get(index) === asked) out.delete(index);
      };
      asked.then(settled, settled);
    }
    const waited = call;
    return new Promise((resolve) => {
      const cancel = setTimer(() => resolve(`did not answer within ${timeoutMs} ms`), timeoutMs);
      waited.then(
        () => {
          cancel();
          resolve(undefined);
        },
        (error: unknown) => {
          cancel();
          resolve(reasonOf(error));
        },
      );
    });
  }

  async function run(): Promise<ReadinessReport> {
    const reasons = await Promise.all(probes.map((_, index) => ask(index)));
    const problems: ReadinessProblem[] = [];
    reasons.forEach((reason, index) => {
      const { service, probe } = probes[index]!;
      if (reason !== undefined) problems.push({ service, part: probe.part, reason });
    });
    return { ready: problems.length === 0, problems };
  }

  return function check(): Promise<ReadinessReport> {
    if (round !== undefined) return round;
    if (last !== undefined && options.now() - last.at < reuseMs) {
      return Promise.resolve(last.report);
    }
    const current = run().then((report) => {
      last = { at: options.now(), report };
      round = undefined;
      return report;
    });
    round = current;
    return current;
  };
}

/** An error's message on one line (or its causes', for an error that says nothing itself). */
function reasonOf(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) {
    return error.errors.map(reasonOf).join("; ");
  }
  if (error instanceof Error) {
    const message = error.message !== ""
      ? error.message
      : String((error as { code?: unknown }).code ?? error.name);
    return message.replace(/\s*\n\s*/g, " ");
  }
  return String(error);
}

function realTimer(task: () => void, ms: number): () => void {
  const timer = setTimeout(task, ms);
  timer.unref();
  return () => clearTimeout(timer);
}
