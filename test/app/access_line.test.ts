import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { accessLogger, hostRoutes } from "../../lib/app/host_routes.ts";
import { MetricsRegistry } from "../../lib/metrics/mod.ts";
import {
  type AnsweredBy,
  answeredBy,
  type HttpRequest,
  noteAnsweredBy,
  type ResponseEntry,
} from "../../lib/http/mod.ts";
import { createLogger, encodedWriter, LineBuffer, type Logger } from "../../lib/log/mod.ts";
import { bytesPerCall, COVERED } from "../_helpers/allocation.ts";
import { createPrng } from "../_helpers/prng.ts";

const T = Date.UTC(2026, 10, 28, 18, 4, 5, 6);
const decoder = new TextDecoder();

/** A request record as the access log reads it: its client and its note. */
function requestFrom(remoteAddress: string, by: AnsweredBy | undefined): HttpRequest {
  const request = { remoteAddress } as unknown as HttpRequest;
  if (by !== undefined) noteAnsweredBy(request, by);
  return request;
}

/** Both loggers of the same lines: the generic one (fields object, formatRecord) and the one with a line buffer. */
function loggers(now: () => number) {
  const generic: string[] = [];
  const buffer = new LineBuffer(256);
  const plain = createLogger({ write: (line) => generic.push(line), now });
  const encoded = createLogger({
    write: (line) => buffer.addText(line),
    writeEncoded: (level, time, fields) => buffer.addJson(level, time, fields),
    now,
  });
  return {
    plain,
    encoded,
    generic,
    encodedLines: () => decoder.decode(buffer.take()).split("\n").slice(0, -1),
  };
}

describe("the access line, written as bytes", () => {
  it("is the line the generic logger writes, for every route, method, status, id, client and abort", () => {
    const prng = createPrng(2911);
    const bys: (AnsweredBy | undefined)[] = [
      undefined,
      { service: "water", route: "/v1/odata/v4/Observations" },
      { service: "relay", route: "/webhook" },
      { service: "host", route: "other" },
      { service: 'qu"ote', route: "/items/:id" },
      { service: "sync", route: "/é/水" },
    ];
    const methods = ["GET", "POST", "HEAD", "DELETE", "PURGE", "M\u00e9"];
    const ids = [undefined, "a8cbd97a-1", "proxy.id:9@x+y/z=", 'we"ird\\'];
    const clients = ["127.0.0.1", "::1", "::ffff:10.1.2.3", "", "cli\u00e9nt", "\ud800"];
    const durations = [0, 0.0004, 0.0005, 4.6364, 12, 1234.5, 3_600_000.25, Number.NaN];
    let time = T;
    const { plain, encoded, generic, encodedLines } = loggers(() => time);
    const slow = accessLogger(plain);
    const fast = accessLogger(encoded);
    assert.equal(
      encodedWriter(plain, "info"),
      undefined,
      "a logger without writeEncoded has no encoded writer",
    );
    assert.notEqual(encodedWriter(encoded, "info"), undefined);
    for (let n = 0; n < 3000; n++) {
      time += prng.int(700);
      const by = prng.pick(bys);
      const entry: ResponseEntry = {
        request: prng.int(8) === 0 ? undefined : requestFrom(prng.pick(clients), by),
        method: prng.pick(methods),
        status: prng.pick([200, 202, 304, 400, 404, 408, 500, 503]),
        bytes: prng.pick([0, 82, 119, 65_536, 123_456_789]),
        durationMs: prng.pick(durations) + (prng.int(2) === 0 ? 0 : prng.next()),
        requestId: prng.pick(ids),
        aborted: prng.int(5) === 0,
      };
      slow(entry);
      fast(entry);
    }
    const lines = encodedLines();
    assert.equal(lines.length, 3000);
    assert.deepEqual(lines, generic);
    // The fields in their order, whichever are there (requestId, service and client may not be).
    const order = [
      "level",
      "time",
      "msg",
      "event",
      "method",
      "route",
      "status",
      "durationMs",
      "bytes",
      "requestId",
      "service",
      "client",
      "aborted",
    ];
    for (const line of lines) {
      const keys = Object.keys(JSON.parse(line));
      assert.deepEqual(keys, order.filter((key) => keys.includes(key)), line);
    }
    assert.ok(lines.some((line) => Object.keys(JSON.parse(line)).length === order.length));
  });

  it("writes a line for a method thousands of characters long, and a status that is not finite as null", () => {
    const { plain, encoded, generic, encodedLines } = loggers(() => T);
    const slow = accessLogger(plain);
    const fast = accessLogger(encoded);
    const by = { service: "water", route: "/items" };
    const long = "X".repeat(15_000);
    for (
      const [method, status] of [[long, 200], [long, 200], ["GET", Number.NaN], [
        "GET",
        Infinity,
      ]] as const
    ) {
      const entry: ResponseEntry = {
        request: requestFrom("127.0.0.1", by),
        method,
        status,
        bytes: 1,
        durationMs: 1,
        requestId: undefined,
        aborted: false,
      };
      slow(entry);
      fast(entry);
    }
    const lines = encodedLines();
    assert.deepEqual(lines, generic);
    assert.equal(JSON.parse(lines[2]!).status, null);
    assert.equal(JSON.parse(lines[0]!).method.length, 15_000);
  });

  it("is written only by a JSON logger without fields of its own, at a level it writes", () => {
    const writeEncoded = () => assert.fail("not written encoded");
    const base = { write: () => {}, writeEncoded, now: () => T };
    assert.equal(encodedWriter(createLogger({ ...base, format: "pretty" }), "info"), undefined);
    assert.equal(encodedWriter(createLogger(base).child({ service: "relay" }), "info"), undefined);
    assert.equal(encodedWriter(createLogger({ ...base, level: "warn" }), "info"), undefined);
    assert.notEqual(encodedWriter(createLogger({ ...base, level: "warn" }), "error"), undefined);
    const lines: string[] = [];
    const child = createLogger({ ...base, write: (line) => lines.push(line) }).child({ pid: 7 });
    accessLogger(child)({
      request: undefined,
      method: "GET",
      status: 400,
      bytes: 1,
      durationMs: 1,
      requestId: undefined,
      aborted: false,
    });
    assert.equal(
      JSON.parse(lines[0]!).pid,
      7,
      "a child's lines keep its fields, by the generic way",
    );
  });

  it("allocates nothing on the heap a line once warm", () => {
    const buffer = new LineBuffer(1 << 24);
    const log: Logger = createLogger({
      write: () => assert.fail("no text line"),
      writeEncoded: (level, time, fields) => buffer.addJson(level, time, fields),
      now: () => T,
    });
    const write = accessLogger(log);
    const by = { service: "relay", route: "/webhook" };
    const entries: ResponseEntry[] = Array.from({ length: 64 }, (_, i) => ({
      request: requestFrom(`127.0.0.${i}`, by),
      method: "POST",
      status: 202,
      bytes: 82 + i,
      durationMs: 0.25 + i / 7,
      requestId: `5313aa7e-${i}`,
      aborted: false,
    }));
    let i = 0;
    const perLine = bytesPerCall(() => write(entries[i++ & 63]!));
    // A heap number or a record a line shows as 16 bytes or more.
    assert.ok(perLine < (COVERED ? 8 : 1), `${perLine} bytes allocated a line (none expected)`);
    assert.equal(decoder.decode(buffer.take()).split("\n").length - 1, i, "every line written");
  });

  it("notes the host's routes with one record a route, so their parts are encoded once", async () => {
    const host = hostRoutes({
      metrics: new MetricsRegistry(),
      services: ["water"],
      state: () => "started",
      ready: () => Promise.resolve({ ready: true, problems: [] }),
      running: () => [],
      accessLog: true,
    });
    const health = host.mounts.find((mount) => mount.prefix === "/health")!;
    const notes = [];
    for (const path of ["/health", "/health", "/health/live"]) {
      const request = makeHostRequest(path);
      await health.handler(request);
      notes.push(answeredBy(request));
    }
    assert.equal(notes[0]?.route, "/health");
    assert.equal(notes[0], notes[1], "the same route's requests share one note");
    assert.notEqual(notes[0], notes[2]);
    assert.deepEqual(notes[2], { service: "host", route: "/health/live" });
  });
});

/** A GET request record for a host route, with the slot the access log's note goes in. */
function makeHostRequest(path: string): HttpRequest {
  return {
    method: "GET",
    path,
    query: "",
    headers: {},
    remoteAddress: "127.0.0.1",
    origin: "http://127.0.0.1",
  } as unknown as HttpRequest;
}
