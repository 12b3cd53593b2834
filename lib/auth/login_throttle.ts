import type { LoginLimiter, LoginSubject } from "./types.ts";

/** Options of {@linkcode LoginThrottle} and `PostgresLoginThrottle`. */
export interface LoginThrottleOptions {
  /** Clock in milliseconds. */
  now: () => number;
  /**
   * Failures of one user name (or one client's secret) from one address
   * within the window before that pair's attempts wait (1 s, then twice as
   * long after each further failure).
   * @default {5}
   */
  maxPerUser?: number;
  /**
   * Failures of one user name (or one client's secret) from every address
   * it has not logged in from within {@linkcode KNOWN_ADDRESS_MS}, within the
   * window, before attempts at it from such addresses wait likewise: guesses
   * spread over many addresses add up. 0 for no such limit.
   * @default {10}
   */
  maxPerName?: number;
  /**
   * Failures from one address, whatever the name, within the window before
   * its attempts wait likewise; 0 for no address limit (behind a proxy every
   * client shares its address).
   * @default {20}
   */
  maxPerAddress?: number;
  /**
   * The window, in milliseconds; also the longest wait.
   * @default {900000}
   */
  windowMs?: number;
  /**
   * Keys tracked before the oldest are forgotten (in memory only).
   * @default {100000}
   */
  maxKeys?: number;
}

/**
 * How long an address stays known for a name after a success there (30
 * days): attempts from it are not slowed by guesses from elsewhere.
 */
export const KNOWN_ADDRESS_MS = 30 * 24 * 3600 * 1000;

/** How often a success refreshes its address's time as known: far more often than it could lapse. */
const KNOWN_REFRESH_MS = 60_000;

/** The limits of {@linkcode LoginThrottleOptions}, with their defaults. */
export interface ThrottleLimits {
  readonly maxPerUser: number;
  readonly maxPerName: number;
  readonly maxPerAddress: number;
  readonly windowMs: number;
}

/**
 * Reads the limits of throttle options, with their defaults.
 * @param options the options
 * @returns every limit
 * @throws {RangeError} for a limit that is not a non-negative integer (a pair limit of 0 included)
 */
export function throttleLimits(options: LoginThrottleOptions): ThrottleLimits {
  const limits = {
    maxPerUser: options.maxPerUser ?? 5,
    maxPerName: options.maxPerName ?? 10,
    maxPerAddress: options.maxPerAddress ?? 20,
    windowMs: options.windowMs ?? 15 * 60_000,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (
      !Number.isSafeInteger(value) || value < (name === "maxPerUser" || name === "windowMs" ? 1 : 0)
    ) {
      throw new RangeError(`Cannot create a login throttle: ${name} is ${value}`);
    }
  }
  return limits;
}

/** What a key's failures in the window make it wait, in whole seconds from `now`. */
export function throttleWait(
  failures: number,
  last: number,
  limit: number,
  window: number,
  now: number,
): number {
  if (failures < limit) return 0;
  // 1 s at the limit, doubling with each failure past it, never longer than the window.
  const delay = Math.min(window, 1000 * 2 ** Math.min(30, failures - limit));
  const until = last + delay;
  return until <= now ? 0 : Math.max(1, Math.ceil((until - now) / 1000));
}

/** One counter of the throttle: its key, and the failures it takes before attempts wait. */
export interface ThrottleKey {
  readonly key: string;
  readonly limit: number;
}

/** The throttle's keys of an attempt, from {@linkcode throttleKeys}. */
export interface ThrottleKeys {
  /** Failures of this name from this address. */
  readonly pair: ThrottleKey;
  /** Failures of this name from addresses it is not known at; undefined without that limit. */
  readonly name: ThrottleKey | undefined;
  /** Failures from this address, whatever the name; undefined without that limit. */
  readonly address: ThrottleKey | undefined;
  /** Where a success of this name from this address is remembered. */
  readonly known: string;
}

/**
 * The throttle's keys of an attempt. An IPv6 address counts by its /64,
 * which one host holds whole: walking its addresses gains nothing. User
 * names and client ids have keys of their own kinds, so neither can pass
 * for the other.
 * @param subject the user name's key, or the client id
 * @param address the client's address
 * @param limits the throttle's limits
 * @returns the keys
 */
export function throttleKeys(
  subject: LoginSubject,
  address: string,
  limits: ThrottleLimits,
): ThrottleKeys {
  const from = networkOf(address);
  const kind = subject.kind === "user" ? "u" : "c";
  return {
    pair: { key: `${kind}a:${from} ${subject.name}`, limit: limits.maxPerUser },
    name: limits.maxPerName > 0
      ? { key: `${kind}:${subject.name}`, limit: limits.maxPerName }
      : undefined,
    address: limits.maxPerAddress > 0
      ? { key: `a:${from}`, limit: limits.maxPerAddress }
      : undefined,
    known: `${kind}k:${from} ${subject.name}`,
  };
}

/**
 * The keys an attempt counts against, the pair's first: the name's own
 * only when the address is not known for the name.
 * @param keys the attempt's keys
 * @param known whether the name succeeded from this address lately
 * @returns the counters to check and count
 */
export function countedKeys(keys: ThrottleKeys, known: boolean): ThrottleKey[] {
  const counted = [keys.pair];
  if (keys.name !== undefined && !known) counted.push(keys.name);
  if (keys.address !== undefined) counted.push(keys.address);
  return counted;
}

/** An IPv4 address as it is (an IPv4-mapped IPv6 one unwrapped); an IPv6 address as its /64. */
function networkOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail] = address.toLowerCase().split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? left : [
    ...left,
    ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"),
    ...right,
  ];
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

/**
 * Slows password and client-secret guessing without locking anyone out
 * (RFC 6749 §4.3.2 and §10.10, OWASP, NIST SP 800-63B §5.2.2). Failures are
 * counted in a sliding window per name *from one address*, per address, and
 * per name from every address the name has not logged in from lately (so
 * that guesses spread over many addresses add up). Past a limit, the
 * attempts that counter covers wait, 1 s and then twice as long after each
 * further failure, up to the window. The right password from an address
 * where the name logged in within 30 days is never slowed by guesses from
 * elsewhere; from a new address it may be asked to wait, never refused for
 * good. Every attempt counts from its start until it succeeds, so that
 * attempts in parallel cannot pass a limit together.
 */
export class LoginThrottle implements LoginLimiter {
  readonly #now: () => number;
  readonly #limits: ThrottleLimits;
  readonly #maxKeys: number;
  readonly #failures = new Map<string, number[]>();
  /** When each name last succeeded from each address, oldest first. */
  readonly #known = new Map<string, number>();
  /** The keys of each subject seen from each address, made once: by kind, address, then name. */
  readonly #keys = {
    user: new Map<string, Map<string, ThrottleKeys>>(),
    client: new Map<string, Map<string, ThrottleKeys>>(),
  };
  #keyCount = 0;

  /**
   * Creates a throttle.
   * @param options clock and limits
   * @throws {RangeError} for a limit that is not a non-negative integer
   */
  constructor(options: LoginThrottleOptions) {
    this.#now = options.now;
    this.#limits = throttleLimits(options);
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /**
   * Starts an attempt. An allowed attempt counts as a failure at once;
   * {@linkcode LoginThrottle.succeed} takes it back.
   * @param subject the user name's key (`usernameKey`) or the client id
   * @param address the client's address
   * @returns 0 when the attempt may go on; else the seconds to wait, and nothing is counted
   */
  start(subject: LoginSubject, address: string): number {
    const now = this.#now();
    const keys = this.#keysOf(subject, address);
    const counted = countedKeys(keys, this.#isKnown(keys.known, now));
    const wait = this.#wait(counted, now);
    if (wait > 0) return wait;
    for (const { key } of counted) {
      const times = this.#recent(key, now);
      times.push(now);
      this.#failures.delete(key);
      this.#failures.set(key, times);
    }
    while (this.#failures.size > this.#maxKeys) {
      this.#failures.delete(this.#failures.keys().next().value!);
    }
    return 0;
  }

  /**
   * Ends an attempt that succeeded: clears the pair's failures, takes the
   * attempt back from the other counts, and remembers the address as known
   * for the name.
   * @param subject the user name's key or the client id
   * @param address the client's address
   */
  succeed(
    subject: LoginSubject,
    address: string,
    options: { readonly counted?: boolean } = {},
  ): void {
    const now = this.#now();
    const keys = this.#keysOf(subject, address);
    const known = this.#isKnown(keys.known, now);
    this.#failures.delete(keys.pair.key);
    if (options.counted !== false) {
      for (const counter of countedKeys(keys, known).slice(1)) {
        this.#failures.get(counter.key)?.pop();
      }
    }
    // Refreshed (and moved to the end, the last to be forgotten) at most once a minute: a
    // back end authenticating many times a second does not rewrite the map each time.
    const at = this.#known.get(keys.known);
    if (at === undefined || now - at >= KNOWN_REFRESH_MS) {
      this.#known.delete(keys.known);
      this.#known.set(keys.known, now);
    }
    while (this.#known.size > this.#maxKeys) this.#known.delete(this.#known.keys().next().value!);
  }

  /**
   * How long an attempt would wait now, counting nothing.
   * @param subject the user name's key or the client id
   * @param address the client's address
   * @returns the seconds to wait; 0 when an attempt may go on
   */
  check(subject: LoginSubject, address: string): number {
    const now = this.#now();
    const keys = this.#keysOf(subject, address);
    return this.#wait(countedKeys(keys, this.#isKnown(keys.known, now)), now);
  }

  #wait(counted: readonly ThrottleKey[], now: number): number {
    let wait = 0;
    for (const { key, limit } of counted) {
      // Counted in place: most keys have no failures, and none is copied to be counted.
      const times = this.#failures.get(key);
      if (times === undefined) continue;
      let recent = 0;
      let last = 0;
      for (const at of times) {
        if (now - at < this.#limits.windowMs) {
          recent++;
          last = at;
        }
      }
      wait = Math.max(wait, throttleWait(recent, last, limit, this.#limits.windowMs, now));
    }
    return wait;
  }

  /** The keys of a subject from an address, made on first use and kept (up to `maxKeys` of them). */
  #keysOf(subject: LoginSubject, address: string): ThrottleKeys {
    const byAddress = this.#keys[subject.kind];
    let byName = byAddress.get(address);
    let keys = byName?.get(subject.name);
    if (keys !== undefined) return keys;
    if (this.#keyCount >= this.#maxKeys) {
      this.#keys.user.clear();
      this.#keys.client.clear();
      this.#keyCount = 0;
      byName = undefined;
    }
    if (byName === undefined) byAddress.set(address, byName = new Map());
    keys = throttleKeys(subject, address, this.#limits);
    byName.set(subject.name, keys);
    this.#keyCount++;
    return keys;
  }

  #isKnown(key: string, now: number): boolean {
    const at = this.#known.get(key);
    return at !== undefined && now - at < KNOWN_ADDRESS_MS;
  }

  #recent(key: string, now: number): number[] {
    return (this.#failures.get(key) ?? []).filter((at) => now - at < this.#limits.windowMs);
  }
}
