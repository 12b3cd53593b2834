// The contract every RevisionFeed implementation passes: in process, and on
// PostgreSQL (LISTEN/NOTIFY). A factory gives two feeds that share what they
// announce on (the same one in process; two pools on one database, as two
// processes have); what one publishes, the other hears. Nothing here sleeps:
// a test waits for what it expects to hear, and publishes a marker after
// what must not be heard (a feed delivers one publisher's announcements in order).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Revision, RevisionFeed } from "../../lib/sync/mod.ts";

/** Two feeds on one shared channel (or one feed twice), and how to close them. */
export interface FeedPair {
  readonly one: RevisionFeed;
  readonly other: RevisionFeed;
  close(): Promise<void>;
}

const ALICE = "a11ce000-0000-4000-8000-000000000001";
const BOB = "b0b00000-0000-4000-8000-000000000002";

function revision(serial: number): Revision {
  return Object.freeze({
    uuid: `00000000-0000-4000-8000-${String(serial).padStart(12, "0")}`,
    serial,
    createdAt: Date.UTC(2026, 0, 5) + serial,
  });
}

/** A listener that keeps what it hears, and a wait for its nth revision. */
function hearing() {
  const heard: Revision[] = [];
  const waiting: { count: number; resolve: () => void }[] = [];
  return {
    heard,
    listener: (revision: Revision) => {
      heard.push(revision);
      for (const wait of [...waiting]) {
        if (heard.length >= wait.count) {
          waiting.splice(waiting.indexOf(wait), 1);
          wait.resolve();
        }
      }
    },
    /** Resolves once `count` revisions were heard. */
    until: (count: number) =>
      heard.length >= count
        ? Promise.resolve()
        : new Promise<void>((resolve) => waiting.push({ count, resolve })),
  };
}

/**
 * Runs the RevisionFeed contract.
 * @param name the implementation's name
 * @param make two feeds sharing what they announce on
 */
export function revisionFeedContract(name: string, make: () => Promise<FeedPair>): void {
  describe(`RevisionFeed contract: ${name}`, () => {
    it("tells a subscriber each revision published for its owner, as published, and no other owner's", async () => {
      const pair = await make();
      try {
        const alice = hearing();
        const stop = await pair.other.subscribe(ALICE, alice.listener);
        await pair.one.publish(BOB, revision(7));
        await pair.one.publish(ALICE, revision(2));
        await pair.one.publish(ALICE, revision(3));
        await alice.until(2);
        assert.deepEqual(alice.heard, [revision(2), revision(3)]);
        stop();
      } finally {
        await pair.close();
      }
    });

    it("tells every subscription of an owner; a stopped one hears nothing more", async () => {
      const pair = await make();
      try {
        const [first, second] = [hearing(), hearing()];
        const stopFirst = await pair.other.subscribe(ALICE, first.listener);
        const stopSecond = await pair.other.subscribe(ALICE, second.listener);
        await pair.one.publish(ALICE, revision(2));
        await Promise.all([first.until(1), second.until(1)]);
        stopFirst();
        // Stopping one subscription twice, or after the owner's last, changes nothing.
        stopFirst();
        await pair.one.publish(ALICE, revision(3));
        await second.until(2);
        assert.deepEqual(first.heard, [revision(2)]);
        assert.deepEqual(second.heard, [revision(2), revision(3)]);
        stopSecond();
      } finally {
        await pair.close();
      }
    });

    it("keeps the same listener subscribed twice as two subscriptions", async () => {
      const pair = await make();
      try {
        const alice = hearing();
        const stop = await pair.other.subscribe(ALICE, alice.listener);
        const again = await pair.other.subscribe(ALICE, alice.listener);
        stop();
        await pair.one.publish(ALICE, revision(2));
        await alice.until(1);
        const marker = hearing();
        const stopMarker = await pair.other.subscribe(BOB, marker.listener);
        await pair.one.publish(BOB, revision(9));
        await marker.until(1);
        assert.deepEqual(alice.heard, [revision(2)]);
        again();
        stopMarker();
      } finally {
        await pair.close();
      }
    });

    it("once closed, tells its subscribers nothing, and a new subscription hears nothing", async () => {
      const pair = await make();
      try {
        const before = hearing();
        await pair.other.subscribe(ALICE, before.listener);
        await pair.other.close();
        const after = hearing();
        (await pair.other.subscribe(ALICE, after.listener))();
        // One's own subscriber is the marker: once it heard, the closed feed would have too.
        const marker = hearing();
        const stop = await pair.one.subscribe(BOB, marker.listener);
        if (pair.one !== pair.other) {
          await pair.one.publish(ALICE, revision(2));
          await pair.one.publish(BOB, revision(3));
          await marker.until(1);
        }
        assert.deepEqual(before.heard, []);
        assert.deepEqual(after.heard, []);
        stop();
      } finally {
        await pair.close();
      }
    });
  });
}
