// A change stream outlives neither its token's expiry nor its revocation: the
// app (token and sync, real tokens) ends it at the first heartbeat after, and
// the client, connecting again, is refused with 401. The heartbeat runs at
// its least setting (1 s); the token's age is the app's injected clock.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { SyncServer } from "../_helpers/sync_server.ts";

const server = new SyncServer();
before(() => server.start({ SYNC_STREAM_HEARTBEAT_MS: "1000", ACCESS_TOKEN_TTL_SECONDS: "600" }));
after(() => server.close());

function changes(token: string): Promise<Response> {
  return fetch(`${server.url}/api/v2/sync/user/changes`, {
    headers: { authorization: `Bearer ${token}`, accept: "text/event-stream" },
    // A stream that neither ends nor pings fails the test rather than hanging it.
    signal: AbortSignal.timeout(30_000),
  });
}

/** Reads a stream to its end; fails when it is still open after `heartbeats` pings. */
async function endsWithin(response: Response, heartbeats: number): Promise<void> {
  assert.equal(response.status, 200);
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let pings = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    pings += value.split(": ping\n").length - 1;
    if (pings > heartbeats) {
      await reader.cancel();
      assert.fail(`the stream was still open after ${pings} heartbeats`);
    }
  }
}

describe("a change stream and its token", () => {
  it("ends at the heartbeat after its token is revoked; the client is then refused", async () => {
    await server.signUp("revoked");
    const { access_token } = await server.login("revoked");
    const stream = await changes(access_token);
    const revoked = await fetch(`${server.url}/oauth2/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ client_id: "demo-app", token: access_token }).toString(),
    });
    assert.equal(revoked.status, 200);
    await endsWithin(stream, 2);
    assert.equal((await changes(access_token)).status, 401);
  });

  it("ends at the heartbeat after its token expires, while another user's stream goes on", async () => {
    await server.signUp("expiring");
    await server.signUp("staying");
    const expiring = await server.login("expiring");
    const stream = await changes(expiring.access_token);
    // Ten minutes later (the token's lifetime), a second user logs in and opens a stream.
    server.clock.time += 600_000;
    const staying = await changes((await server.login("staying")).access_token);
    await endsWithin(stream, 2);
    assert.equal((await changes(expiring.access_token)).status, 401);
    // The other stream outlives two heartbeats.
    const reader = staying.body!.pipeThrough(new TextDecoderStream()).getReader();
    let pings = 0;
    while (pings < 2) {
      const { done, value } = await reader.read();
      assert.equal(done, false, "the other user's stream ended");
      pings += value!.split(": ping\n").length - 1;
    }
    await reader.cancel();
  });
});
