import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { MemoryRevisionFeed, MemorySyncStore, parsePatch } from "../../lib/sync/mod.ts";
import { revisionFeedContract } from "../_contracts/revision_feed.ts";

revisionFeedContract("MemoryRevisionFeed", () => {
  const feed = new MemoryRevisionFeed();
  return Promise.resolve({ one: feed, other: feed, close: () => feed.close() });
});

describe("MemorySyncStore's feed", () => {
  it("announces each revision a patch commits, once the commit is durable, and nothing for a refused one", async () => {
    let n = 0;
    const recorded: unknown[] = [];
    const store = new MemorySyncStore({
      now: () => Date.UTC(2026, 0, 5),
      uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
      // A sink that has the change before the call goes on, as a journal does.
      sink: {
        record: (change) => {
          recorded.push(change);
          return Promise.resolve();
        },
      },
    });
    const owner = "a11ce000-0000-4000-8000-000000000001";
    await store.createContext({ uuid: owner, username: "alice", notifyLanguage: null });
    const heard: { serial: number; recorded: number }[] = [];
    await store.feed.subscribe(
      owner,
      (revision) => heard.push({ serial: revision.serial, recorded: recorded.length }),
    );
    const message = {
      uuid: "10000000-0000-4000-8000-000000000001",
      subject: "Hi",
      body: "",
      read: false,
      sent_at: "2026-01-01T00:00:00Z",
    };
    const made = await store.submit(owner, parsePatch({ objects: { messages: [message] } }));
    await store.submit(owner, parsePatch({ deleted_objects: { teams: [message.uuid] } }));
    await store.place(owner, null, parsePatch({ objects: { teams: [] } }), 16);
    const ticket = await store.place(
      owner,
      null,
      parsePatch({ deleted_objects: { messages: [message.uuid] } }),
      16,
    );
    assert.equal(ticket.status, "done");
    assert.deepEqual(heard, [{ serial: 2, recorded: 2 }, { serial: 3, recorded: 6 }]);
    assert.equal(made.revision?.serial, 2);
  });
});
