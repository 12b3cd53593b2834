// The node adapter's headers on the hot path: sending copies a response's
// headers at most once, and adding the request id makes no copy of its own
// (it goes into the one copy the content length needs, or is the only one).
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  createNodeListener,
  type HttpResponse,
  type NodeListenerRequest,
  type NodeListenerResponse,
} from "../../lib/http/mod.ts";

/** A request with no body, and a response that records what writeHead was given. */
function exchange(): {
  req: NodeListenerRequest;
  res: NodeListenerResponse;
  written: Promise<{ status: number; headers: Readonly<Record<string, string>> | undefined }>;
} {
  let resolve!: (
    value: { status: number; headers: Readonly<Record<string, string>> | undefined },
  ) => void;
  const written = new Promise<
    { status: number; headers: Readonly<Record<string, string>> | undefined }
  >((done) => (resolve = done));
  const req: NodeListenerRequest = {
    method: "GET",
    url: "/x",
    headers: { host: "127.0.0.1:1" },
    socket: { remoteAddress: "127.0.0.1" },
    complete: true,
    readableEnded: true,
    destroyed: false,
    read: () => null,
    resume: () => undefined,
    on: () => undefined,
    off: () => undefined,
  };
  const res: NodeListenerResponse = {
    writeHead: (status, headers) => resolve({ status, headers }),
    write: () => true,
    end: () => undefined,
    cork: () => {},
    uncork: () => {},
    destroy: () => undefined,
    headersSent: false,
    writableFinished: true,
    on: () => undefined,
    off: () => undefined,
  };
  return { req, res, written };
}

/** An object that counts how often it is copied (spread or enumerated whole). */
function counted<T extends object>(target: T): { value: T; copies: () => number } {
  let copies = 0;
  const value = new Proxy(target, {
    ownKeys(object) {
      copies++;
      return Reflect.ownKeys(object);
    },
  });
  return { value, copies: () => copies };
}

describe("createNodeListener() sending headers", () => {
  const headers = Object.freeze({ "content-type": "text/plain", "content-length": "2" });
  const response: HttpResponse = Object.freeze({ status: 200, headers, body: "ok" });

  it("hands a response's headers that say their length to writeHead as they are: no copy", async () => {
    const { req, res, written } = exchange();
    createNodeListener(() => response)(req, res);
    assert.equal((await written).headers, headers);
  });

  it("adds the request id in one copy of the headers, and copies the response not at all", async () => {
    const { req, res, written } = exchange();
    const seenHeaders = counted({ ...headers });
    const seen = counted({ status: 200, headers: seenHeaders.value, body: "ok" });
    createNodeListener(() => seen.value, { requestId: () => "r-1" })(req, res);
    const sent = (await written).headers;
    assert.equal(seen.copies(), 0, "the response was copied");
    assert.equal(seenHeaders.copies(), 1, "the headers were copied more than once");
    assert.notEqual(sent, headers);
    assert.deepEqual(sent, { ...headers, "x-request-id": "r-1" });
    assert.deepEqual(response.headers, { "content-type": "text/plain", "content-length": "2" });
  });

  it("puts the content length and the request id into the same one copy", async () => {
    const { req, res, written } = exchange();
    const plain = { "content-type": "text/plain" };
    createNodeListener(() => ({ status: 200, headers: plain, body: "ok" }), {
      requestId: () => "r-2",
    })(req, res);
    assert.deepEqual((await written).headers, {
      "content-type": "text/plain",
      "content-length": "2",
      "x-request-id": "r-2",
    });
    assert.deepEqual(plain, { "content-type": "text/plain" });
  });
});
