import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createLogger, OutageLog } from "../../lib/log/mod.ts";

describe("OutageLog", () => {
  it("logs an outage as two lines however many failures it holds, with their count and length", () => {
    const lines: string[] = [];
    let time = 1_000_000;
    const log = createLogger({ write: (line) => lines.push(line), now: () => time });
    const redis = new OutageLog(log, "Relay queue: Redis at 127.0.0.1:6379", () => time);
    redis.recovered();
    assert.equal(lines.length, 0, "nothing while up");
    for (let attempt = 0; attempt < 100; attempt++) {
      redis.failed(new Error("connect ECONNREFUSED 127.0.0.1:6379"));
      time += 100;
    }
    assert.equal(redis.down, true);
    assert.equal(redis.failures, 100);
    redis.recovered();
    redis.recovered();
    assert.equal(lines.length, 2);
    const [down, up] = lines.map((line) => JSON.parse(line));
    assert.equal(down.level, "error");
    assert.match(down.msg, /^Relay queue: Redis at 127\.0\.0\.1:6379: unreachable/);
    assert.equal(down.err.message, "connect ECONNREFUSED 127.0.0.1:6379");
    assert.equal(up.level, "info");
    assert.equal(up.failures, 100);
    assert.equal(up.downSeconds, 10);
    assert.equal(redis.down, false);
    redis.failed(new Error("again"));
    assert.equal(lines.length, 3, "a new outage is logged again");
  });

  it("writes each further failure at the debug level only", () => {
    const lines: string[] = [];
    const log = createLogger({ write: (line) => lines.push(line), now: () => 0, level: "debug" });
    const pg = new OutageLog(log, "Database", () => 0);
    pg.failed(new Error("a"));
    pg.failed(new Error("b"));
    assert.deepEqual(lines.map((line) => JSON.parse(line).level), ["error", "debug"]);
  });

  it("writes to a service's plain log (info and error only): two lines, the count in the second", () => {
    const lines: string[] = [];
    let time = 0;
    const plain = {
      info: (message: string) => lines.push(`info ${message}`),
      error: (message: string) => lines.push(`error ${message}`),
    };
    const pg = new OutageLog(plain, "Database: PostgreSQL at postgres://db/app", () => time);
    for (let attempt = 0; attempt < 20; attempt++) {
      pg.failed(new Error("connect ECONNREFUSED"));
      time += 500;
    }
    pg.recovered();
    assert.deepEqual(lines, [
      "error Database: PostgreSQL at postgres://db/app: unreachable; retrying, and logging once more when it answers",
      "info Database: PostgreSQL at postgres://db/app: answering again after 10.0 s and 20 failures",
    ]);
  });

  it("counts an attempt it watches: a failure in the outage, a success ending it, each outcome passed on", async () => {
    const lines: string[] = [];
    const log = createLogger({ write: (line) => lines.push(line), now: () => 0 });
    const redis = new OutageLog(log, "Redis", () => 0);
    await assert.rejects(redis.watch(Promise.reject(new Error("ECONNREFUSED"))), /ECONNREFUSED/);
    await assert.rejects(redis.watch(Promise.reject(new Error("ECONNREFUSED"))));
    assert.deepEqual([redis.down, redis.failures], [true, 2]);
    assert.equal(await redis.watch(Promise.resolve(7)), 7);
    assert.equal(redis.down, false);
    assert.deepEqual(lines.map((line) => JSON.parse(line).level), ["error", "info"]);
  });
});

describe("OutageLog of a task", () => {
  it("says failing and working again, two lines however many runs failed", () => {
    const lines: string[] = [];
    let time = 0;
    const plain = {
      info: (message: string) => lines.push(`info ${message}`),
      error: (message: string) => lines.push(`error ${message}`),
    };
    const sweep = new OutageLog(plain, "Auth: sweeping expired tokens", () => time, {
      subject: "task",
    });
    for (let run = 0; run < 3; run++) {
      sweep.failed(new Error("Cannot reach the database now"));
      time += 60_000;
    }
    sweep.recovered();
    assert.deepEqual(lines, [
      "error Auth: sweeping expired tokens: failing; retrying, and logging once more when it works",
      "info Auth: sweeping expired tokens: working again after 180.0 s and 3 failures",
    ]);
  });
});
