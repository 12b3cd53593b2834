// The readiness check and the health routes, in process with a manual clock
// and manual timers: which probes are asked, when, for how long, and what
// /health, /health/live and /health/ready answer.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  type AppState,
  createApp,
  createHealthHandler,
  createReadinessCheck,
  readConfig,
  type ReadinessReport,
  type ReadinessSource,
} from "../../lib/app/mod.ts";
import { createRouter, type HttpResponse, type ReadinessProbe } from "../../lib/http/mod.ts";
import { makeRequest } from "../_helpers/http.ts";
import { freePort, redisServerSkip, startRedis } from "../_helpers/redis.ts";

/** Timers run by hand: `advance(ms)` fires those due. */
class ManualTimers {
  time = 0;
  readonly #timers = new Set<{ at: number; task: () => void }>();
  setTimer = (task: () => void, ms: number): () => void => {
    const timer = { at: this.time + ms, task };
    this.#timers.add(timer);
    return () => this.#timers.delete(timer);
  };
  now = (): number => this.time;
  get pending(): number {
    return this.#timers.size;
  }
  advance(ms: number): void {
    this.time += ms;
    for (const timer of [...this.#timers]) {
      if (timer.at <= this.time) {
        this.#timers.delete(timer);
        timer.task();
      }
    }
  }
}

/** A probe whose answers the test gives, counting how often it is asked. */
class HeldProbe implements ReadinessProbe {
  readonly part: string;
  asked = 0;
  #answers: { resolve: () => void; reject: (error: Error) => void }[] = [];
  constructor(part: string) {
    this.part = part;
  }
  check = (): Promise<void> => {
    this.asked++;
    return new Promise((resolve, reject) => this.#answers.push({ resolve, reject }));
  };
  answer(): void {
    for (const answer of this.#answers.splice(0)) answer.resolve();
  }
  fail(message: string): void {
    for (const answer of this.#answers.splice(0)) answer.reject(new Error(message));
  }
}

/** Lets settled promises run their callbacks. */
async function flush(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

const up = (part: string): ReadinessProbe => ({ part, check: () => Promise.resolve() });
const down = (part: string, message: string): ReadinessProbe => ({
  part,
  check: () => Promise.reject(new Error(message)),
});

describe("createReadinessCheck()", () => {
  it("is ready when every probe answers, and when there is none", async () => {
    const timers = new ManualTimers();
    const sources: ReadinessSource[] = [{ service: "relay", probes: [up("queue")] }, {
      service: "water",
      probes: [],
    }];
    assert.deepEqual(
      await createReadinessCheck(sources, { now: timers.now, setTimer: timers.setTimer })(),
      { ready: true, problems: [] },
    );
    assert.deepEqual(
      await createReadinessCheck([], { now: timers.now, setTimer: timers.setTimer })(),
      { ready: true, problems: [] },
    );
    assert.equal(timers.pending, 0, "no timer outlives its probe");
  });

  it("names each failing part with its service and why, in order", async () => {
    const timers = new ManualTimers();
    const check = createReadinessCheck([
      {
        service: "sync",
        probes: [
          down("database: PostgreSQL at postgres://db/app", "connect ECONNREFUSED 127.0.0.1:5432"),
        ],
      },
      {
        service: "relay",
        probes: [up("queue: Redis"), down("queue: Kafka", "first line\n  second line")],
      },
    ], { now: timers.now, setTimer: timers.setTimer });
    assert.deepEqual(await check(), {
      ready: false,
      problems: [
        {
          service: "sync",
          part: "database: PostgreSQL at postgres://db/app",
          reason: "connect ECONNREFUSED 127.0.0.1:5432",
        },
        { service: "relay", part: "queue: Kafka", reason: "first line second line" },
      ],
    });
  });

  it("counts a probe that throws, or rejects with an empty error, as failing with a reason", async () => {
    const timers = new ManualTimers();
    const silent = Object.assign(new Error(""), { code: "ECONNREFUSED" });
    const check = createReadinessCheck([{
      service: "relay",
      probes: [
        {
          part: "throws",
          check: () => {
            throw new TypeError("not a promise");
          },
        },
        {
          part: "silent",
          check: () => Promise.reject(new AggregateError([silent, new Error("other")])),
        },
        { part: "text", check: () => Promise.reject("plain") },
      ],
    }], { now: timers.now, setTimer: timers.setTimer });
    assert.deepEqual((await check()).problems.map((problem) => problem.reason), [
      "not a promise",
      "ECONNREFUSED; other",
      "plain",
    ]);
  });

  it("reports a probe that hangs as failing once its time is up, not later", async () => {
    const timers = new ManualTimers();
    const hung = new HeldProbe("queue: Redis");
    const check = createReadinessCheck([{ service: "relay", probes: [hung, up("other")] }], {
      now: timers.now,
      setTimer: timers.setTimer,
      timeoutMs: 1000,
    });
    let report: ReadinessReport | undefined;
    void check().then((value) => (report = value));
    timers.advance(999);
    await flush();
    assert.equal(report, undefined, "still waiting within the time");
    timers.advance(1);
    await flush();
    assert.deepEqual(report, {
      ready: false,
      problems: [{
        service: "relay",
        part: "queue: Redis",
        reason: "did not answer within 1000 ms",
      }],
    });
  });

  it("shares one round between callers and reuses its report for reuseMs, then asks again", async () => {
    const timers = new ManualTimers();
    const probe = new HeldProbe("queue");
    const check = createReadinessCheck([{ service: "relay", probes: [probe] }], {
      now: timers.now,
      setTimer: timers.setTimer,
      reuseMs: 250,
    });
    const first = [check(), check(), check()];
    await flush();
    assert.equal(probe.asked, 1, "three callers, one question");
    probe.answer();
    const reports = await Promise.all(first);
    assert.ok(reports.every((report) => report.ready));
    timers.advance(249);
    assert.equal((await check()).ready, true);
    assert.equal(probe.asked, 1, "the report is reused within reuseMs");
    timers.advance(1);
    const again = check();
    await flush();
    assert.equal(probe.asked, 2, "asked again after reuseMs");
    probe.fail("gone");
    assert.deepEqual((await again).problems, [{ service: "relay", part: "queue", reason: "gone" }]);
  });

  it("waits again for a probe still out from an earlier round instead of asking it twice", async () => {
    const timers = new ManualTimers();
    const hung = new HeldProbe("database");
    const check = createReadinessCheck([{ service: "sync", probes: [hung] }], {
      now: timers.now,
      setTimer: timers.setTimer,
      timeoutMs: 1000,
      reuseMs: 250,
    });
    for (let round = 0; round < 5; round++) {
      const report = check();
      timers.advance(1000);
      assert.equal((await report).ready, false);
      timers.advance(250);
    }
    assert.equal(hung.asked, 1, "five rounds, one question still out");
    const late = check();
    hung.answer();
    assert.equal((await late).ready, true, "its late answer counts in the round that waits for it");
    timers.advance(250);
    const next = check();
    await flush();
    assert.equal(hung.asked, 2, "once answered, it is asked anew");
    hung.answer();
    assert.equal((await next).ready, true);
  });
});

describe("createHealthHandler()", () => {
  function handler(
    state: AppState,
    report: ReadinessReport,
    asked: { count: number } = { count: 0 },
  ) {
    return createHealthHandler({
      state: () => state,
      services: ["water", "relay"],
      ready: () => {
        asked.count++;
        return Promise.resolve(report);
      },
    });
  }
  const get = async (
    router: ReturnType<typeof handler>,
    path: string,
    method = "GET",
  ): Promise<{ response: HttpResponse; body: unknown }> => {
    const response = await router(makeRequest({ method, path }));
    return {
      response,
      body: typeof response.body === "string" && response.body !== ""
        ? JSON.parse(response.body)
        : undefined,
    };
  };
  const ok: ReadinessReport = { ready: true, problems: [] };
  const failing: ReadinessReport = {
    ready: false,
    problems: [{
      service: "relay",
      part: "queue: Redis at redis://127.0.0.1:6379",
      reason: "connect ECONNREFUSED 127.0.0.1:6379",
    }],
  };

  it("answers /health and /health/live 200 with the state, whatever the backends", async () => {
    const asked = { count: 0 };
    for (
      const [state, status] of [["started", "ok"], ["starting", "starting"], [
        "closing",
        "closing",
      ]] as const
    ) {
      for (const path of ["/health", "/health/live"]) {
        const { response, body } = await get(handler(state, failing, asked), path);
        assert.equal(response.status, 200, `${state} ${path}`);
        assert.deepEqual(body, { status, services: ["water", "relay"] });
        assert.equal(response.headers?.["cache-control"], "no-store");
      }
    }
    assert.equal(asked.count, 0, "liveness never asks the backends");
  });

  it("answers /health/ready 200 when started and every backend answers", async () => {
    const { response, body } = await get(handler("started", ok), "/health/ready");
    assert.equal(response.status, 200);
    assert.deepEqual(body, { status: "ok", services: ["water", "relay"] });
  });

  it("answers /health/ready 503 with Retry-After and each failing part", async () => {
    const { response, body } = await get(handler("started", failing), "/health/ready");
    assert.equal(response.status, 503);
    assert.equal(response.headers?.["retry-after"], "1");
    assert.equal(response.headers?.["cache-control"], "no-store");
    assert.deepEqual(body, {
      status: "unavailable",
      services: ["water", "relay"],
      problems: failing.problems,
    });
  });

  it("answers /health/ready 503 while starting or closing, without asking the backends", async () => {
    const asked = { count: 0 };
    for (const state of ["new", "starting", "closing", "closed"] as const) {
      const { response, body } = await get(handler(state, ok, asked), "/health/ready");
      assert.equal(response.status, 503, state);
      const { problems } = body as {
        problems: { service: string; part: string; reason: string }[];
      };
      assert.equal(problems.length, 1);
      assert.equal(problems[0]?.part, "server");
      assert.match(
        problems[0]?.reason ?? "",
        state === "new" || state === "starting" ? /starting/ : /shutting down/,
      );
    }
    assert.equal(asked.count, 0);
  });

  it("lists its routes (HEAD answers too; other methods 405)", async () => {
    const router = handler("started", ok);
    assert.deepEqual(router.routes.map(({ method, path }) => ({ method, path })), [
      { method: "GET", path: "/health" },
      { method: "GET", path: "/health/live" },
      { method: "GET", path: "/health/ready" },
    ]);
    assert.ok(
      router.routes.every((route) => route.doc !== undefined),
      "each documented for /openapi.json",
    );
    assert.equal((await get(router, "/health/ready", "HEAD")).response.status, 200);
    await assert.rejects(
      Promise.resolve().then(() => router(makeRequest({ method: "POST", path: "/health/ready" }))),
      { code: "ERR_HTTP_METHOD_NOT_ALLOWED" },
    );
  });
});

describe("createApp() health routes", () => {
  it("answers /health/ready from the app's state and the probes of its services, and /health/live 200 throughout", async () => {
    let redisUp = true;
    let clock = 0;
    const app = createApp(readConfig({ SERVICES: "water", STATE_DIR: "" }), {
      log: { info: () => {}, error: () => {} },
      monotonic: () => clock,
      services: [() =>
        Promise.resolve({
          name: "extra",
          prefixes: ["/extra"],
          handler: createRouter([]),
          readiness: [{
            part: "queue: Redis at redis://127.0.0.1:6379",
            check: () => (redisUp
              ? Promise.resolve()
              : Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:6379"))),
          }],
          describe: () => ({ endpoints: [], credentials: [], notes: [] }),
          drain: () => Promise.resolve(),
          close: () => Promise.resolve(),
        })],
    });
    const ask = async (
      path: string,
    ): Promise<
      {
        status: number;
        body: { status: string; problems?: { service: string; part: string; reason: string }[] };
      }
    > => {
      const response = await app.handler(makeRequest({ method: "GET", path }));
      return { status: response.status, body: JSON.parse(String(response.body)) };
    };
    const before = await ask("/health/ready");
    assert.equal(before.status, 503, "not ready before start");
    assert.equal(before.body.problems?.[0]?.part, "server");
    assert.equal((await ask("/health/live")).status, 200);
    await app.start();
    try {
      assert.deepEqual(await ask("/health/ready"), {
        status: 200,
        body: { status: "ok", services: ["water"] },
      });
      redisUp = false;
      assert.equal((await ask("/health/ready")).status, 200, "the report before is kept a moment");
      clock += 250;
      const down = await ask("/health/ready");
      assert.equal(down.status, 503);
      assert.deepEqual(down.body.problems, [{
        service: "extra",
        part: "queue: Redis at redis://127.0.0.1:6379",
        reason: "connect ECONNREFUSED 127.0.0.1:6379",
      }]);
      assert.equal((await ask("/health/live")).status, 200);
      assert.equal((await ask("/health")).status, 200);
    } finally {
      await app.close();
    }
    assert.equal((await ask("/health/ready")).status, 503, "not ready once closed");
  });
});

describe("createApp() on Redis, in process", { skip: redisServerSkip }, () => {
  it(
    "names the relay's queue and the rate limits while Redis is away, logs each outage as two lines, and is ready again once it is back",
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "tributary-ready-"));
      const port = await freePort();
      let redis = await startRedis(dir, port);
      const lines: string[] = [];
      const waiters: { readonly until: () => boolean; readonly done: () => void }[] = [];
      const note = (line: string): void => {
        lines.push(line);
        for (const waiter of [...waiters]) {
          if (waiter.until()) {
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.done();
          }
        }
      };
      /** Resolves once the log holds what `until` looks for. */
      const logged = (
        until: () => boolean,
      ): Promise<
        void
      > => (until() ? Promise.resolve() : new Promise((done) => waiters.push({ until, done })));
      let clock = 0;
      const app = createApp(
        readConfig({
          SERVICES: "water,relay",
          STATE_DIR: "",
          STORAGE_TYPE: "redis",
          REDIS_URL: redis.url,
          RATE_LIMIT_REDIS_URL: redis.url,
        }),
        {
          log: {
            info: (message: string) => note(`info ${message}`),
            error: (message: string) => note(`error ${message}`),
          },
          monotonic: () => clock,
        },
      );
      const ask = async (): Promise<
        { status: number; problems: { service: string; part: string }[] }
      > => {
        clock += 250;
        const response = await app.handler(makeRequest({ method: "GET", path: "/health/ready" }));
        const body = JSON.parse(String(response.body)) as {
          problems?: { service: string; part: string }[];
        };
        return {
          status: response.status,
          problems: (body.problems ?? []).map(({ service, part }) => ({ service, part })),
        };
      };
      try {
        await app.start();
        assert.deepEqual(await ask(), { status: 200, problems: [] });
        const from = lines.length;
        await redis.stop();
        const away = await ask();
        assert.equal(away.status, 503);
        assert.deepEqual(away.problems.sort((a, b) => a.service.localeCompare(b.service)), [
          { service: "relay", part: `queue: Redis at ${redis.url}` },
          { service: "water", part: `rate limits: Redis at ${redis.url}` },
        ]);
        redis = await startRedis(dir, port);
        const recovered = () =>
          lines.slice(from).filter((line) => line.includes(": answering again after ")).length ===
            2;
        await logged(recovered);
        assert.deepEqual(await ask(), { status: 200, problems: [] });
        const outage = lines.slice(from);
        assert.deepEqual(
          outage.map((line) => line.replace(/ after .*$/, "").replace(/; retrying.*$/, "")).sort(),
          [
            `error Rate limits: Redis at ${redis.url}: unreachable`,
            `error Relay queue: Redis at ${redis.url}: unreachable`,
            `info Rate limits: Redis at ${redis.url}: answering again`,
            `info Relay queue: Redis at ${redis.url}: answering again`,
          ],
        );
      } finally {
        await app.close();
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
