// streamChanges() against a scripted server: each request answered by the
// test with a body it writes chunk by chunk, so that an event split
// mid-line, a heartbeat, a dropped connection and a resume are each a step
// of the test; sleeps are recorded, never waited.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { SseParser } from "../../lib/sync_client/_sse.ts";
import { streamChanges, type StreamChangesOptions } from "../../lib/sync_client/mod.ts";

const R1 = "00000000-0000-4000-8000-000000000001";
const R2 = "00000000-0000-4000-8000-000000000002";
const R3 = "00000000-0000-4000-8000-000000000003";

const event = (revision: string, serial: number): string =>
  `id: ${revision}\nevent: revision\ndata: ${JSON.stringify({ revision, serial })}\n\n`;

/** A response body the test writes to, and ends or breaks. */
function pipe() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) });
  const encoder = new TextEncoder();
  return {
    response: new Response(body, {
      status: 200,
      headers: { "content-type": "text/event-stream; charset=utf-8" },
    }),
    write: (text: string) => controller.enqueue(encoder.encode(text)),
    end: () => controller.close(),
    fail: () => controller.error(new TypeError("terminated: other side closed")),
  };
}

interface Asked {
  readonly path: string;
  readonly method: string;
  readonly headers: Headers;
}

/** Runs the transport on scripted answers; collects what it yields. */
function harness(
  answer: (asked: Asked, index: number) => Response | Promise<Response>,
  options: StreamChangesOptions = {},
  since?: string,
) {
  const asked: Asked[] = [];
  const sleeps: number[] = [];
  const stop = new AbortController();
  const transport = streamChanges({
    random: (size) => new Uint8Array(size).fill(128),
    sleep: (ms) => {
      sleeps.push(ms);
      return Promise.resolve();
    },
    ...options,
  });
  const iterator = transport(since, stop.signal, (path, init = {}) => {
    const request = {
      path,
      method: init.method ?? "GET",
      headers: new Headers(init.headers),
    };
    asked.push(request);
    return Promise.resolve(answer(request, asked.length - 1));
  })[Symbol.asyncIterator]();
  return {
    asked,
    sleeps,
    stop,
    next: async () => (await iterator.next()).value,
  };
}

describe("SseParser", () => {
  const cases = [
    {
      name: "joins data lines and keeps the event's name and id",
      chunks: ["id: a\nevent: revision\ndata: one\ndata: two\n\n"],
      expected: [{ kind: "event", id: "a", event: "revision", data: "one\ntwo" }],
    },
    {
      name: "reads lines split anywhere, and CRLF split between chunks",
      chunks: ["id: a\r", "\nda", "ta: x\r\n", "\r\n"],
      expected: [{ kind: "event", id: "a", event: "message", data: "x" }],
    },
    {
      name: "takes a lone CR as a line end, and drops a leading BOM",
      chunks: ["\uFEFFdata: x\r\rdata: y\r", "\r"],
      expected: [
        { kind: "event", id: "", event: "message", data: "x" },
        { kind: "event", id: "", event: "message", data: "y" },
      ],
    },
    {
      name: "gives comments and digit-only retry times; ignores other fields",
      chunks: [": ping\n\nretry: 1500\nretry: 2s\nfoo: bar\n\n"],
      expected: [{ kind: "comment", text: "ping" }, { kind: "retry", ms: 1500 }],
    },
    {
      name: "keeps the last id for later events, and ignores an id with a NUL",
      chunks: ["id: a\ndata: 1\n\ndata: 2\n\nid: b\0c\ndata: 3\n\n"],
      expected: [
        { kind: "event", id: "a", event: "message", data: "1" },
        { kind: "event", id: "a", event: "message", data: "2" },
        { kind: "event", id: "a", event: "message", data: "3" },
      ],
    },
    {
      name: "dispatches nothing for an event without data, but keeps its id",
      chunks: ["id: z\n\ndata\n\n"],
      expected: [{ kind: "event", id: "z", event: "message", data: "" }],
    },
    {
      name: "drops an event the stream's end cuts short",
      chunks: ["data: whole\n\ndata: cut"],
      expected: [{ kind: "event", id: "", event: "message", data: "whole" }],
    },
  ] as const;
  for (const c of cases) {
    it(c.name, () => {
      const parser = new SseParser();
      const items = [...c.chunks.flatMap((chunk) => parser.push(chunk)), ...parser.end()];
      assert.deepEqual(items, c.expected);
    });
  }

  it("ends a line a lone CR closed at the stream's end", () => {
    const parser = new SseParser();
    assert.deepEqual(parser.push(": last\r"), []);
    assert.deepEqual(parser.end(), [{ kind: "comment", text: "last" }]);
  });
});

describe("streamChanges()", () => {
  it("yields each announced revision, across chunks split mid-line and heartbeats", async () => {
    const stream = pipe();
    const { next, asked, stop } = harness(() => stream.response, {}, R1);
    const first = next();
    stream.write("retry: 3000\n\n: ping\n\nid: " + R2.slice(0, 10));
    stream.write(R2.slice(10) + "\nevent: revision\nda");
    stream.write(`ta: {"revision":"${R2}","serial":2}\n`);
    stream.write("\n");
    assert.equal(await first, R2);
    stream.write(": ping\n\n" + event(R3, 3));
    assert.equal(await next(), R3);
    assert.equal(asked.length, 1);
    assert.equal(asked[0]!.path, "/api/v2/sync/user/changes");
    assert.equal(asked[0]!.headers.get("accept"), "text/event-stream");
    assert.equal(asked[0]!.headers.get("last-event-id"), R1, "resumes from the given revision");
    stop.abort();
    stream.end();
    assert.equal(await next(), undefined);
  });

  it("connects again after the stream ends, from the last event's id, after the server's retry time", async () => {
    const streams = [pipe(), pipe()];
    const { next, asked, sleeps } = harness((_asked, index) => streams[index]!.response);
    const first = next();
    streams[0]!.write("retry: 1200\n\n" + event(R2, 2));
    assert.equal(await first, R2);
    const second = next();
    streams[0]!.fail();
    await Promise.resolve();
    streams[1]!.write(event(R3, 3));
    assert.equal(await second, R3);
    assert.equal(asked.length, 2);
    assert.equal(asked[0]!.headers.get("last-event-id"), null, "nothing to resume from at first");
    assert.equal(asked[1]!.headers.get("last-event-id"), R2);
    assert.deepEqual(sleeps, [1200]);
  });

  it("backs off while connections end before telling anything, and starts over after one that did", async () => {
    const streams = [pipe(), pipe(), pipe(), pipe()];
    const { next, sleeps } = harness((_asked, index) => streams[index]!.response, {
      reconnectDelay: 1000,
    });
    const yielded = next();
    streams[0]!.end();
    streams[1]!.write("retry: 1000\n\n");
    streams[1]!.end();
    streams[2]!.write(event(R2, 2));
    assert.equal(await yielded, R2);
    const after = next();
    streams[2]!.end();
    streams[3]!.write(event(R3, 3));
    assert.equal(await after, R3);
    // The server's 1000, plus full jitter (0x80808080 / 2 ** 32 of the ceiling) of 1000 · 2^(failures - 1).
    assert.deepEqual(sleeps, [1000 + 501, 1000 + 1003, 1000]);
  });

  it("falls back to the long-poll when the server has no stream (404)", async () => {
    const { next, asked } = harness((request) => {
      if (request.path.endsWith("/changes")) return new Response("{}", { status: 404 });
      if (request.path === "/api/v2/sync/user") {
        return new Response(null, { status: 200, headers: { etag: `"${R1}"` } });
      }
      return request.path.includes(R1)
        ? new Response(null, { status: 200, headers: { etag: `"${R1}.${R2}"` } })
        : new Response(null, { status: 200, headers: { etag: `"${R2}.${R3}"` } });
    });
    assert.equal(await next(), R2);
    assert.equal(await next(), R3);
    assert.deepEqual(asked.map((a) => `${a.method} ${a.path}`), [
      "GET /api/v2/sync/user/changes",
      "HEAD /api/v2/sync/user",
      `HEAD /api/v2/sync/user/since/${R1}?wait=30`,
      `HEAD /api/v2/sync/user/since/${R2}?wait=30`,
    ]);
  });

  it("falls back to the long-poll when the answer is not a stream, from the revision it has", async () => {
    let clock = 0;
    const { next, asked, sleeps } = harness(
      (request) => {
        if (request.path.endsWith("/changes")) {
          return new Response("<html></html>", {
            status: 200,
            headers: { "content-type": "text/html" },
          });
        }
        if (request.path.includes(R1)) {
          if (asked.length === 2) {
            // The server did not wait: the rest of the wait is waited here.
            clock += 1000;
            return new Response(null, { status: 204, headers: { etag: `"${R1}"` } });
          }
          clock += 30_000;
          return new Response(null, { status: 204, headers: { etag: `"${R2}"` } });
        }
        return new Response(null, { status: 410 });
      },
      { now: () => clock },
      R1,
    );
    assert.equal(await next(), R2);
    assert.deepEqual(sleeps, [29_000]);
    assert.equal(await next(), undefined, "a pruned revision: maybe something changed");
    assert.equal(asked.at(-1)!.path, `/api/v2/sync/user/since/${R2}?wait=30`);
  });

  it("falls back to the long-poll on a fetch whose body cannot be read as a stream", async () => {
    const { next } = harness(
      (request) => {
        if (request.path.endsWith("/changes")) {
          const response = new Response("", {
            headers: { "content-type": "text/event-stream" },
          });
          Object.defineProperty(response, "body", { value: undefined });
          return response;
        }
        return new Response(null, { status: 200, headers: { etag: `"${R1}.${R2}"` } });
      },
      {},
      R1,
    );
    assert.equal(await next(), R2);
  });

  it("retries a failed connection with backoff, and stops when the signal aborts", async () => {
    const stream = pipe();
    let calls = 0;
    const { next, sleeps, stop } = harness(
      () => {
        calls++;
        if (calls === 1) throw new TypeError("fetch failed");
        if (calls === 2) return new Response("{}", { status: 400 });
        return stream.response;
      },
      { reconnectDelay: 0 },
      R1,
    );
    const yielded = next();
    stream.write(event(R2, 2));
    assert.equal(await yielded, R2);
    assert.deepEqual(sleeps, [501, 1003]);
    const ended = next();
    stop.abort();
    stream.fail();
    assert.equal(await ended, undefined);
  });

  it("refuses a wait out of range", () => {
    assert.throws(() => streamChanges({ wait: 0 }), RangeError);
    assert.throws(() => streamChanges({ wait: 1.5 }), RangeError);
    assert.throws(() => streamChanges({ reconnectDelay: -1 }), RangeError);
  });
});
