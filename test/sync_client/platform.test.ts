// The sync client's platform defaults: the sleep that ends when its signal
// aborts, random bytes and ids, and the online state read from a
// browser-like global (set up here, and taken away after).
import assert from "node:assert/strict";
import { afterEach, describe, it } from "node:test";
import {
  defaultRandom,
  defaultSleep,
  drawFrom,
  platformOnline,
  platformStreams,
  uuidFrom,
} from "../../lib/sync_client/_platform.ts";

describe("defaultSleep()", () => {
  it("resolves at once for a signal already aborted", async () => {
    await defaultSleep(3_600_000, AbortSignal.abort());
  });

  it("resolves when its signal aborts, long before its time", async () => {
    const stop = new AbortController();
    const slept = defaultSleep(3_600_000, stop.signal);
    stop.abort();
    await slept;
  });
});

describe("defaultRandom(), uuidFrom(), drawFrom()", () => {
  it("gives the bytes asked for, a version 4 UUID and a draw in [0, 1)", () => {
    assert.equal(defaultRandom(16).length, 16);
    assert.match(
      uuidFrom(defaultRandom),
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    assert.equal(drawFrom((size) => new Uint8Array(size).fill(255)), (2 ** 32 - 1) / 2 ** 32);
    assert.equal(drawFrom((size) => new Uint8Array(size)), 0);
  });
});

describe("platformStreams()", () => {
  it("says Node's fetch reads a body as a stream", () => {
    assert.equal(platformStreams(), true);
  });
});

describe("platformOnline()", () => {
  const globals = globalThis as unknown as Record<string, unknown>;
  afterEach(() => {
    delete globals["navigator"];
    delete globals["addEventListener"];
    delete globals["removeEventListener"];
  });

  it("is always online where the platform has no navigator or events", () => {
    const source = platformOnline();
    assert.equal(source.isOnline(), true);
    source.subscribe(() => assert.fail("no events here"))();
  });

  it("reads navigator.onLine and hears the online and offline events", () => {
    const navigator = { onLine: false };
    const target = new EventTarget();
    Object.defineProperty(globalThis, "navigator", { value: navigator, configurable: true });
    globals["addEventListener"] = target.addEventListener.bind(target);
    globals["removeEventListener"] = target.removeEventListener.bind(target);
    const source = platformOnline();
    assert.equal(source.isOnline(), false);
    navigator.onLine = true;
    assert.equal(source.isOnline(), true);
    const heard: boolean[] = [];
    const stop = source.subscribe((online) => heard.push(online));
    target.dispatchEvent(new Event("offline"));
    target.dispatchEvent(new Event("online"));
    stop();
    target.dispatchEvent(new Event("offline"));
    assert.deepEqual(heard, [false, true]);
  });
});
