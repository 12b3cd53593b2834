import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createLogger, formatRecord, type LogFormat, type LogLevel } from "../../lib/log/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

const T = Date.UTC(2026, 10, 24, 22, 30, 1, 123);

function capture(level?: LogLevel, format?: LogFormat) {
  const lines: string[] = [];
  const log = createLogger({
    write: (line) => lines.push(line),
    now: () => T,
    ...(level === undefined ? {} : { level }),
    ...(format === undefined ? {} : { format }),
  });
  return { log, lines };
}

describe("createLogger", () => {
  it("writes one JSON object a line with level, time and msg, then the fields", () => {
    const { log, lines } = capture();
    log.info("Datasets loaded", { datasets: 8, rows: 120_000 });
    assert.deepEqual(JSON.parse(lines[0]!), {
      level: "info",
      time: "2026-11-24T22:30:01.123Z",
      msg: "Datasets loaded",
      datasets: 8,
      rows: 120_000,
    });
  });

  it("writes its level and the more severe ones only", () => {
    const { log, lines } = capture("warn");
    log.debug("d");
    log.info("i");
    log.warn("w");
    log.error("e");
    assert.deepEqual(lines.map((line) => JSON.parse(line).level), ["warn", "error"]);
    assert.equal(log.enabled("info"), false);
    assert.equal(log.enabled("error"), true);
    assert.throws(
      () => createLogger({ write: () => {}, now: () => T, level: "loud" as LogLevel }),
      RangeError,
    );
  });

  it("adds a child's fields to each of its lines, the line's own fields last", () => {
    const { log, lines } = capture();
    log.child({ service: "relay", part: "queue" }).child({ part: "worker" }).info("Started", {
      workers: 4,
    });
    assert.deepEqual(JSON.parse(lines[0]!), {
      level: "info",
      time: "2026-11-24T22:30:01.123Z",
      msg: "Started",
      service: "relay",
      part: "worker",
      workers: 4,
    });
  });

  it("describes an error by its name, message and code, on the same line, its stack only at the debug level", () => {
    const { log, lines } = capture();
    const failure = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:6379"), {
      code: "ECONNREFUSED",
    });
    log.error("Relay queue: Redis at 127.0.0.1:6379", failure);
    assert.equal(lines.length, 1);
    assert.doesNotMatch(lines[0]!, /\n/);
    assert.deepEqual(JSON.parse(lines[0]!).err, {
      name: "Error",
      message: "connect ECONNREFUSED 127.0.0.1:6379",
      code: "ECONNREFUSED",
    });
    const debug = capture("debug");
    debug.log.error("Failed", failure);
    assert.match(JSON.parse(debug.lines[0]!).err.stack, /connect ECONNREFUSED/);
    const aggregate = capture();
    aggregate.log.error("Failed", new AggregateError([failure], ""));
    assert.equal(
      JSON.parse(aggregate.lines[0]!).err.message,
      "connect ECONNREFUSED 127.0.0.1:6379",
      "an AggregateError says what its first error says",
    );
  });

  it("never writes a field named like a secret", () => {
    const { log, lines } = capture();
    log.info("Request", {
      authorization: "Bearer abc",
      password: "hunter2",
      apiKey: "k1",
      api_key: "k2",
      refreshToken: "r",
      clientSecret: "s",
      route: "/oauth2/token",
    });
    const line = JSON.parse(lines[0]!);
    for (
      const name of [
        "authorization",
        "password",
        "apiKey",
        "api_key",
        "refreshToken",
        "clientSecret",
      ]
    ) assert.equal(line[name], "[redacted]", name);
    assert.equal(line.route, "/oauth2/token");
    assert.doesNotMatch(lines[0]!, /abc|hunter2|k1|k2/);
  });

  it("keeps level, time and msg when fields use their names, and writes what JSON cannot hold as text", () => {
    const { log, lines } = capture();
    const cycle: Record<string, unknown> = {};
    cycle["self"] = cycle;
    log.info("Odd", { level: "x", msg: "y", big: 12n, cycle, gone: undefined });
    assert.deepEqual(JSON.parse(lines[0]!), {
      level: "info",
      time: "2026-11-24T22:30:01.123Z",
      msg: "Odd",
      big: "12",
      cycle: "[object Object]",
    });
  });

  it("writes JSON lines as JSON.stringify writes the same object, for any text and time", () => {
    const seed = 20261125;
    const random = createPrng(seed);
    const pieces = [
      '"',
      "\\",
      "\n",
      "\u0000",
      "\u001f",
      " ",
      "\u007f",
      "\u2028",
      "\ud800",
      "\udc00",
      "\ud83d\ude00",
      "é",
      "a",
      "</",
    ];
    const text = () =>
      Array.from(
        { length: random.int(6) },
        () => random.next() < 0.5 ? random.pick(pieces) : String.fromCharCode(random.int(0x10000)),
      ).join("");
    // Whole and fractional milliseconds, before and after 1970, near a second's end, and years 0 and 9999's edges.
    const times = [
      0,
      -1,
      -0.5,
      999.9,
      1000,
      -62167219200000,
      -62167219200001,
      253402300799999,
      253402300800000,
    ];
    for (let i = 0; i < 2000; i++) {
      const base = Math.floor((random.next() - 0.3) * 4e12);
      times.push(base, base + 1, base + 0.25, base - base % 1000 + 999, -base);
    }
    for (const time of times) {
      const msg = text();
      const fields = {
        [`f${text()}`]: text(),
        route: text(),
        status: random.int(600),
        share: random.next(),
      };
      const line = formatRecord({ level: "info", time, msg, fields }, "json");
      assert.equal(
        line,
        JSON.stringify({ level: "info", time: new Date(time).toISOString(), msg, ...fields }),
        `seed ${seed}, time ${time}`,
      );
    }
  });

  it("writes readable lines for a terminal", () => {
    const { log, lines } = capture("info", "pretty");
    log.warn("Slow request", { route: "/v1/odata/v4/Observations", ms: 1200, note: "two words" });
    log.error(
      "Database",
      Object.assign(new Error("the server closed the connection"), { code: "57P01" }),
    );
    assert.equal(
      lines[0],
      '2026-11-24T22:30:01.123Z WARN  Slow request route=/v1/odata/v4/Observations ms=1200 note="two words"',
    );
    assert.equal(
      lines[1],
      "2026-11-24T22:30:01.123Z ERROR Database: the server closed the connection (57P01)",
    );
    assert.equal(
      formatRecord({ level: "info", time: T, msg: "x", fields: {}, error: "plain" }, "pretty"),
      "2026-11-24T22:30:01.123Z INFO  x: plain",
    );
  });
});
