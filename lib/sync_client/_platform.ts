// The effects a client takes as overridable defaults: the clock, random
// bytes, sleeping, and the platform's online state. Found on globalThis, so
// that browsers, Node, Deno, Bun and React Native give what they have; never
// a Node module.
import type { OnlineSource } from "./types.ts";

/** Waits `ms` milliseconds, or less when `signal` aborts (it then resolves all the same). */
export function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Random bytes from the platform's Web Crypto. */
export function defaultRandom(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  const crypto: unknown = Reflect.get(globalThis, "crypto");
  const fill: unknown = typeof crypto === "object" && crypto !== null
    ? Reflect.get(crypto, "getRandomValues")
    : undefined;
  if (typeof fill !== "function") {
    throw new TypeError(
      "Cannot draw random bytes: this platform has no crypto.getRandomValues; pass random",
    );
  }
  Reflect.apply(fill, crypto, [bytes]);
  return bytes;
}

/** The platform's `fetch`, found when called (so that a test's replacement of it counts). */
export function defaultFetch(input: string, init?: RequestInit): Promise<Response> {
  return fetch(input, init);
}

/**
 * Whether the platform's `fetch` gives a body that reads as a stream (not so
 * in React Native, whose `Response` has no `body`).
 */
export function platformStreams(): boolean {
  try {
    const body: unknown = new Response("x").body;
    return typeof body === "object" && body !== null &&
      typeof Reflect.get(body, "getReader") === "function";
  } catch {
    return false;
  }
}

/**
 * The platform's online state: `navigator.onLine` and the `online` and
 * `offline` events of `globalThis` where they exist (browsers, React
 * Native with a polyfill); elsewhere always online.
 */
export function platformOnline(): OnlineSource {
  const navigator: unknown = Reflect.get(globalThis, "navigator");
  const read = (): boolean => {
    if (typeof navigator !== "object" || navigator === null) return true;
    return Reflect.get(navigator, "onLine") !== false;
  };
  return {
    isOnline: read,
    subscribe(listener) {
      const add: unknown = Reflect.get(globalThis, "addEventListener");
      const remove: unknown = Reflect.get(globalThis, "removeEventListener");
      if (typeof add !== "function" || typeof remove !== "function") return () => {};
      const on = (): void => listener(true);
      const off = (): void => listener(false);
      Reflect.apply(add, globalThis, ["online", on]);
      Reflect.apply(add, globalThis, ["offline", off]);
      return () => {
        Reflect.apply(remove, globalThis, ["online", on]);
        Reflect.apply(remove, globalThis, ["offline", off]);
      };
    },
  };
}

/** A version 4 UUID from random bytes. */
export function uuidFrom(random: (size: number) => Uint8Array): string {
  const bytes = random(16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
    hex.slice(20)
  }`;
}

/** A uniform number in [0, 1) from random bytes. */
export function drawFrom(random: (size: number) => Uint8Array): number {
  const bytes = random(4);
  return (((bytes[0]! << 24) >>> 0) + (bytes[1]! << 16) + (bytes[2]! << 8) + bytes[3]!) /
    2 ** 32;
}
