import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { AUTH_SETTINGS, MemoryAuthStore, startAuthService } from "../../lib/auth/mod.ts";
import { readSettings } from "../../lib/config/mod.ts";
import { pooledRandom } from "../../lib/crypto/mod.ts";
import { StorageError } from "../../lib/storage/mod.ts";

/** A memory store whose sweep fails while `down` says so, as PostgreSQL's does while the database is away. */
class FlakyStore extends MemoryAuthStore {
  down = true;
  sweeps = 0;
  override async sweep(now: number): Promise<void> {
    this.sweeps++;
    if (this.down) {
      throw new StorageError(
        "ERR_STORAGE_UNAVAILABLE",
        "Cannot reach the database now: connect ECONNREFUSED 127.0.0.1:5432",
      );
    }
    await super.sweep(now);
  }
}

describe("startAuthService()", () => {
  it("survives sweeps that fail: one line when they start failing, one when they work again, no unhandled rejection", async () => {
    const store = new FlakyStore();
    let tick: (() => void) | undefined;
    const lines: string[] = [];
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => void unhandled.push(reason);
    process.on("unhandledRejection", listener);
    try {
      let time = 0;
      const { service } = await startAuthService(readSettings(AUTH_SETTINGS, {}), {
        store,
        now: () => time,
        random: pooledRandom(),
        every: (task, ms) => {
          assert.equal(ms, 60_000);
          tick = task;
          return () => {};
        },
        log: {
          info: (message) => void lines.push(`info ${message}`),
          error: (message) => void lines.push(`error ${message}`),
        },
      });
      const turn = async () => {
        time += 60_000;
        tick!();
        await new Promise<void>((resolve) => setImmediate(resolve));
      };
      await turn();
      await turn();
      store.down = false;
      await turn();
      await turn();
      assert.equal(store.sweeps, 4, "tried again every period");
      assert.deepEqual(lines, [
        "error Auth: sweeping expired tokens: failing; retrying, and logging once more when it works",
        "info Auth: sweeping expired tokens: working again after 120.0 s and 2 failures",
      ]);
      assert.deepEqual(unhandled, []);
      await service.drain();
    } finally {
      process.off("unhandledRejection", listener);
    }
  });
});
