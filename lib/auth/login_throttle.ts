import type { LoginLimiter } from "./types.ts";

/** Options of {@linkcode LoginThrottle} and `PostgresLoginThrottle`. */
export interface LoginThrottleOptions {
  /** Clock in milliseconds. */
  now: () => number;
  /**
   * Failed logins for one user name from one address within the window
   * before that pair's logins wait (1 s, then twice as long after each further failure).
   * @default {5}
   */
  maxPerUser?: number;
  /**
   * Failed logins from one address, whatever the name, within the window
   * before its logins wait likewise; 0 for no address limit (behind a proxy
   * every client shares its address).
   * @default {20}
   */
  maxPerAddress?: number;
  /**
   * The window, in milliseconds; also the longest wait.
   * @default {900000}
   */
  windowMs?: number;
  /**
   * Keys tracked before the oldest are forgotten.
   * @default {100000}
   */
  maxKeys?: number;
}

/** What a key's failures in the window make it wait, in whole seconds from `now`. */
export function throttleWait(failures: number, last: number, limit: number, window: number, now: number): number {
  if (failures < limit) return 0;
  // 1 s at the limit, doubling with each failure past it, never longer than the window.
  const delay = Math.min(window, 1000 * 2 ** Math.min(30, failures - limit));
  const until = last + delay;
  return until <= now ? 0 : Math.max(1, Math.ceil((until - now) / 1000));
}

/**
 * The throttle's keys of an attempt: the name from this address, and the
 * address. An IPv6 address counts by its /64, which one host holds whole:
 * walking its addresses gains nothing.
 */
export function throttleKeys(username: string, address: string, maxPerUser: number, maxPerAddress: number): { key: string; limit: number }[] {
  const from = networkOf(address);
  const keys = [{ key: `ua:${from} ${username}`, limit: maxPerUser }];
  if (maxPerAddress > 0) keys.push({ key: `a:${from}`, limit: maxPerAddress });
  return keys;
}

/** An IPv4 address as it is (an IPv4-mapped IPv6 one unwrapped); an IPv6 address as its /64. */
function networkOf(address: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1]!;
  if (!address.includes(":")) return address;
  const [head = "", tail] = address.toLowerCase().split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = tail === undefined ? left : [...left, ...new Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups.slice(0, 4).map((group) => group.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}

/**
 * Slows password guessing without locking anyone out (RFC 6749 §4.3.2,
 * OWASP, NIST SP 800-63B §5.2.2): failed logins are counted per user name
 * *from one client address*, and per address, in a sliding window. Past a
 * limit, that pair's (or that address's) logins wait, 1 s and then twice as
 * long after each further failure, up to the window. Guesses against a name
 * from elsewhere do not slow its owner: the right password from an address
 * that has not failed logs in at once. Every attempt counts from its start
 * until it succeeds, so that attempts in parallel cannot pass a limit together.
 */
export class LoginThrottle implements LoginLimiter {
  readonly #now: () => number;
  readonly #maxPerUser: number;
  readonly #maxPerAddress: number;
  readonly #window: number;
  readonly #maxKeys: number;
  readonly #failures = new Map<string, number[]>();

  /**
   * Creates a throttle.
   * @param options clock and limits
   */
  constructor(options: LoginThrottleOptions) {
    this.#now = options.now;
    this.#maxPerUser = options.maxPerUser ?? 5;
    this.#maxPerAddress = options.maxPerAddress ?? 20;
    this.#window = options.windowMs ?? 15 * 60_000;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /**
   * Starts a login attempt. An allowed attempt counts as a failure at once;
   * {@linkcode LoginThrottle.succeed} takes it back.
   * @param username the user name's key (`usernameKey`)
   * @param address the client's address
   * @returns 0 when the attempt may go on; else the seconds to wait, and nothing is counted
   */
  start(username: string, address: string): number {
    const now = this.#now();
    const keys = throttleKeys(username, address, this.#maxPerUser, this.#maxPerAddress);
    let wait = 0;
    for (const { key, limit } of keys) {
      const times = this.#recent(key, now);
      wait = Math.max(wait, throttleWait(times.length, times[times.length - 1] ?? 0, limit, this.#window, now));
    }
    if (wait > 0) return wait;
    for (const { key } of keys) {
      const times = this.#recent(key, now);
      times.push(now);
      this.#failures.delete(key);
      this.#failures.set(key, times);
    }
    while (this.#failures.size > this.#maxKeys) this.#failures.delete(this.#failures.keys().next().value!);
    return 0;
  }

  /**
   * Ends an attempt that succeeded: clears the pair's failures and takes the
   * attempt back from the address's count.
   * @param username the user name's key
   * @param address the client's address
   */
  succeed(username: string, address: string): void {
    const [pair, byAddress] = throttleKeys(username, address, this.#maxPerUser, this.#maxPerAddress);
    this.#failures.delete(pair!.key);
    if (byAddress !== undefined) this.#failures.get(byAddress.key)?.pop();
  }

  #recent(key: string, now: number): number[] {
    return (this.#failures.get(key) ?? []).filter((at) => now - at < this.#window);
  }
}
