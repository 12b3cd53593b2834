// The contract every ConfigStore implementation passes: memory (with and
// without its journal), Redis and Kafka. Each test makes its own backend, so
// none depends on another.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { ConfigRecord, ConfigStore } from "../../lib/relay/mod.ts";

/** A backend the stores of one test share, as the relay processes of one deployment do. */
export interface ConfigBackend {
  /**
   * Opens a store on the backend as a starting process would. Where the
   * backend holds one process only (memory, the journal), the store opened
   * before is closed first and the new one reads what it left.
   */
  open(): Promise<ConfigStore>;
  /** Closes what the backend opened. */
  close(): Promise<void>;
}

/** What a backend offers beyond the common part. */
export interface ConfigBackendKind {
  /** Stores opened at once see each other's changes (Redis, Kafka). */
  readonly shared: boolean;
  /** `put` compares the expected revision (memory, Redis); a log (Kafka) does not. */
  readonly compares: boolean;
}

/** Resolves with the records `store` tells of, once `until` holds of them. */
function seen(
  store: ConfigStore,
  until: (records: readonly ConfigRecord[]) => boolean,
): Promise<ConfigRecord[]> {
  const records: ConfigRecord[] = [];
  return new Promise((resolve) => {
    const stop = store.watch((record) => {
      records.push(record);
      if (until(records)) {
        stop();
        resolve(records);
      }
    });
  });
}

function stored(put: Awaited<ReturnType<ConfigStore["put"]>>): number {
  assert.equal(put.stored, true, "the change was stored");
  return (put as { revision: number }).revision;
}

/**
 * Runs the ConfigStore contract.
 * @param name the implementation's name
 * @param kind what it offers beyond the common part
 * @param make makes a fresh, empty backend
 */
export function configStoreContract(
  name: string,
  kind: ConfigBackendKind,
  make: () => Promise<ConfigBackend>,
): void {
  async function using(test: (backend: ConfigBackend) => Promise<void>): Promise<void> {
    const backend = await make();
    try {
      await test(backend);
    } finally {
      await backend.close();
    }
  }

  describe(`ConfigStore contract: ${name}`, { timeout: 60_000 }, () => {
    it("starts empty, stores a value under a key with a positive revision and loads it back", () =>
      using(async (backend) => {
        const store = await backend.open();
        assert.deepEqual(await store.load(), []);
        const revision = stored(await store.put("acme/orders", '{"url":"https://a.example/"}', 0));
        assert.ok(Number.isSafeInteger(revision) && revision > 0, `revision ${revision}`);
        assert.deepEqual(await store.load(), [{
          key: "acme/orders",
          revision,
          value: '{"url":"https://a.example/"}',
        }]);
      }));

    it("keeps only a key's latest value; revisions grow over every key; load gives revision order", () =>
      using(async (backend) => {
        const store = await backend.open();
        const a1 = stored(await store.put("acme/a", "a1", 0));
        const b1 = stored(await store.put("acme/b", "b1", 0));
        const a2 = stored(await store.put("acme/a", "a2", a1));
        assert.ok(a1 < b1 && b1 < a2, `${a1} < ${b1} < ${a2}`);
        assert.deepEqual(await store.load(), [{ key: "acme/b", revision: b1, value: "b1" }, {
          key: "acme/a",
          revision: a2,
          value: "a2",
        }]);
      }));

    it("keeps any text as it was given", () =>
      using(async (backend) => {
        const store = await backend.open();
        const value = '{"note":"line\\nbreak","raw":"\n\t\\"quoted\\" ü 💧 \u2028"}';
        const revision = stored(await store.put("tenant-1/ep_ü", value, 0));
        assert.deepEqual(await store.load(), [{ key: "tenant-1/ep_ü", revision, value }]);
      }));

    it("keeps every stored value for the next process (a restart)", () =>
      using(async (backend) => {
        const first = await backend.open();
        const a = stored(await first.put("acme/a", "a1", 0));
        const a2 = stored(await first.put("acme/a", "a2", a));
        const b = stored(await first.put("acme/b", "b1", 0));
        const next = await backend.open();
        assert.deepEqual(await next.load(), [{ key: "acme/a", revision: a2, value: "a2" }, {
          key: "acme/b",
          revision: b,
          value: "b1",
        }]);
        const c = stored(await next.put("acme/c", "c1", 0));
        assert.ok(c > b, "revisions keep growing after a restart");
      }));

    it("tells a watcher of every change stored after it started, in revision order", () =>
      using(async (backend) => {
        const store = await backend.open();
        const early = stored(await store.put("acme/early", "e", 0));
        const told = seen(store, (records) => records.some((record) => record.key === "acme/z"));
        const a = stored(await store.put("acme/a", "a1", 0));
        stored(await store.put("acme/a", "a2", a));
        stored(await store.put("acme/z", "z1", 0));
        const records = await told;
        assert.ok(
          records.every((record) => record.revision > early),
          "nothing from before the watch",
        );
        for (let i = 1; i < records.length; i++) {
          assert.ok(records[i]!.revision >= records[i - 1]!.revision, "in revision order");
        }
        const last = new Map(records.map((record) => [record.key, record.value]));
        assert.deepEqual([...last], [["acme/a", "a2"], ["acme/z", "z1"]]);
      }));

    // A log (Kafka) stores every change, the last one winning: it has no stale revision to refuse.
    if (kind.compares) {
      it("answers a change made from a stale revision with the current record, and stores nothing", () =>
        using(async (backend) => {
          const store = await backend.open();
          const first = stored(await store.put("acme/a", "a1", 0));
          const second = stored(await store.put("acme/a", "a2", first));
          assert.deepEqual(await store.put("acme/a", "stale", first), {
            stored: false,
            current: { key: "acme/a", revision: second, value: "a2" },
          });
          assert.deepEqual(await store.put("acme/a", "as new", 0), {
            stored: false,
            current: { key: "acme/a", revision: second, value: "a2" },
          });
          assert.deepEqual(await store.put("acme/none", "x", 7), {
            stored: false,
            current: undefined,
          });
          assert.deepEqual(await store.load(), [{ key: "acme/a", revision: second, value: "a2" }]);
        }));
    }

    // Memory and the journal belong to one process: there is no other to share with.
    if (kind.shared) {
      it("shares changes between processes: one's change is loaded and told to the other", () =>
        using(async (backend) => {
          const a = await backend.open();
          const b = await backend.open();
          const told = seen(
            b,
            (records) => records.some((record) => record.value === "from a, changed"),
          );
          const first = stored(await a.put("acme/x", "from a", 0));
          const second = stored(await a.put("acme/x", "from a, changed", first));
          const records = await told;
          assert.equal(records.at(-1)!.revision, second);
          assert.deepEqual((await b.load()).map((record) => [record.key, record.value]), [[
            "acme/x",
            "from a, changed",
          ]]);
          if (kind.compares) {
            // Two processes creating the same key at once: one wins, the other is told what it lost to.
            const [one, two] = await Promise.all([
              a.put("acme/race", "a", 0),
              b.put("acme/race", "b", 0),
            ]);
            assert.equal([one, two].filter((put) => put.stored).length, 1, "exactly one stored");
            const lost = (one.stored ? two : one) as { stored: false; current: ConfigRecord };
            assert.equal(lost.current.value, one.stored ? "a" : "b");
          }
        }));
    }
  });
}
