// shareRedis and shareKafka with fake connections that count what is
// opened and closed: one connection per server and settings, each caller's
// hooks told of it, a caller's close leaving it to the others.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type {
  ConnectKafkaOptions,
  ConnectRedisOptions,
  KafkaConnection,
  RedisScripts,
} from "../../lib/storage/mod.ts";
import { shareKafka, shareRedis } from "../../lib/storage/_internal.ts";

/** A fake connectRedis: each connection answers scripts with its number, and keeps the hooks it was given. */
function fakeRedis(): {
  connect: (url: string, options?: ConnectRedisOptions) => Promise<RedisScripts>;
  opened: { url: string; options: ConnectRedisOptions; closed: boolean }[];
  failNext: () => void;
} {
  const opened: { url: string; options: ConnectRedisOptions; closed: boolean }[] = [];
  let fail = false;
  return {
    opened,
    failNext: () => (fail = true),
    connect: (url, options = {}) => {
      if (fail) {
        fail = false;
        return Promise.reject(new Error(`cannot reach ${url}`));
      }
      const connection = { url, options, closed: false };
      const number = opened.push(connection);
      return Promise.resolve({
        run: () => Promise.resolve(number),
        close: () => {
          connection.closed = true;
          return Promise.resolve();
        },
      });
    },
  };
}

/** A log of what a caller's hooks were told. */
function told(name: string, lines: string[]): ConnectRedisOptions {
  return {
    onError: (error) => lines.push(`${name} error ${(error as Error).message}`),
    onReady: () => lines.push(`${name} ready`),
  };
}

describe("shareRedis()", () => {
  it("opens one connection per URL and timeouts, when first asked for, for every caller", async () => {
    const fake = fakeRedis();
    const shared = shareRedis(fake.connect);
    assert.equal(fake.opened.length, 0, "nothing opened before the first call");
    const [queue, limits] = await Promise.all([
      shared.connect("redis://127.0.0.1:6379"),
      shared.connect("redis://127.0.0.1:6379"),
    ]);
    assert.equal(fake.opened.length, 1);
    assert.deepEqual([await queue.run("return 1", []), await limits.run("return 1", [])], [1, 1]);
    const other = await shared.connect("redis://127.0.0.1:6380");
    const slower = await shared.connect("redis://127.0.0.1:6379", { commandTimeoutMs: 100 });
    assert.deepEqual([await other.run("return 1", []), await slower.run("return 1", [])], [2, 3]);
    assert.equal(fake.opened[2]!.options.commandTimeoutMs, 100);
    await shared.close();
  });

  it("tells each caller's hooks of the connection's failures and return, until that caller closes", async () => {
    const fake = fakeRedis();
    const shared = shareRedis(fake.connect);
    const lines: string[] = [];
    const queue = await shared.connect("redis://h", told("queue", lines));
    await shared.connect("redis://h", told("limits", lines));
    const hooks = fake.opened[0]!.options;
    hooks.onError?.(new Error("lost"));
    hooks.onReady?.();
    await queue.close();
    hooks.onError?.(new Error("lost again"));
    assert.deepEqual(lines, [
      "queue error lost",
      "limits error lost",
      "queue ready",
      "limits ready",
      "limits error lost again",
    ]);
  });

  it("leaves the connection open when a caller closes, refuses that caller's scripts, and closes it with close()", async () => {
    const fake = fakeRedis();
    const shared = shareRedis(fake.connect);
    const queue = await shared.connect("redis://h");
    const limits = await shared.connect("redis://h");
    await queue.close();
    assert.equal(fake.opened[0]!.closed, false);
    await assert.rejects(queue.run("return 1", []), /connection is closed/);
    assert.equal(await limits.run("return 1", []), 1);
    await shared.close();
    assert.equal(fake.opened[0]!.closed, true);
    await shared.connect("redis://h");
    assert.equal(fake.opened.length, 2, "a call after close() opens anew");
    await shared.close();
  });

  it("throws a failed first connection to its callers, and opens anew at the next call", async () => {
    const fake = fakeRedis();
    const shared = shareRedis(fake.connect);
    fake.failNext();
    await assert.rejects(shared.connect("redis://h"), /cannot reach redis:\/\/h/);
    const again = await shared.connect("redis://h");
    assert.equal(await again.run("return 1", []), 1);
    await shared.close();
    assert.equal(fake.opened[0]!.closed, true);
  });
});

/** A fake connectKafka: counts connections, and notes subscriptions made and left. */
function fakeKafka(): {
  connect: (brokers: readonly string[], options?: ConnectKafkaOptions) => Promise<KafkaConnection>;
  opened: { brokers: readonly string[]; options: ConnectKafkaOptions; closed: boolean }[];
  events: string[];
} {
  const opened: { brokers: readonly string[]; options: ConnectKafkaOptions; closed: boolean }[] =
    [];
  const events: string[] = [];
  return {
    opened,
    events,
    connect: (brokers, options = {}) => {
      const connection = { brokers, options, closed: false };
      opened.push(connection);
      return Promise.resolve({
        produce: (records) => Promise.resolve(records.map((_, index) => index)),
        subscribe: (subscription) => {
          events.push(`join ${subscription.groupId}`);
          return Promise.resolve({
            pause: () => {},
            resume: () => {},
            commit: () => Promise.resolve(),
            close: () => {
              events.push(`leave ${subscription.groupId}`);
              return Promise.resolve();
            },
          });
        },
        partitions: () => Promise.resolve(1),
        ends: () => Promise.resolve(new Map()),
        createTopics: () => Promise.resolve(undefined),
        describeTopics: () => Promise.resolve({ topics: new Map(), unjudged: undefined }),
        close: () => {
          connection.closed = true;
          return Promise.resolve();
        },
      });
    },
  };
}

const subscription = (groupId: string) => ({
  groupId,
  topics: ["t"],
  fromBeginning: true,
  onBatch: () => {},
  onAssign: () => {},
});

describe("shareKafka()", () => {
  it("opens one connection per broker list and settings, for every caller", async () => {
    const fake = fakeKafka();
    const shared = shareKafka(fake.connect);
    await shared.connect(["127.0.0.1:9092"], { sessionTimeoutMs: 30_000 });
    await shared.connect(["127.0.0.1:9092"], { sessionTimeoutMs: 30_000 });
    assert.equal(fake.opened.length, 1);
    await shared.connect(["127.0.0.1:9092"], { sessionTimeoutMs: 10_000 });
    await shared.connect(["127.0.0.1:9093"], { sessionTimeoutMs: 30_000 });
    assert.equal(fake.opened.length, 3);
    assert.deepEqual(fake.opened.map((connection) => connection.options.sessionTimeoutMs), [
      30_000,
      10_000,
      30_000,
    ]);
    await shared.close();
    assert.ok(fake.opened.every((connection) => connection.closed));
  });

  it("gives each caller its own subscriptions, left at the caller's close, and the connection to the others", async () => {
    const fake = fakeKafka();
    const shared = shareKafka(fake.connect);
    const lines: string[] = [];
    const queue = await shared.connect(["b:1"], {
      onError: (error) => lines.push(`queue ${(error as Error).message}`),
    });
    const other = await shared.connect(["b:1"], {
      onError: (error) => lines.push(`other ${(error as Error).message}`),
    });
    const work = await queue.subscribe(subscription("relay"));
    await queue.subscribe(subscription("relay-config"));
    await work.close();
    fake.opened[0]!.options.onError?.(new Error("broker away"));
    await queue.close();
    fake.opened[0]!.options.onError?.(new Error("broker away again"));
    assert.deepEqual(fake.events, [
      "join relay",
      "join relay-config",
      "leave relay",
      "leave relay-config",
    ]);
    assert.deepEqual(lines, ["queue broker away", "other broker away", "other broker away again"]);
    assert.equal(fake.opened[0]!.closed, false);
    assert.deepEqual(await other.produce([{ topic: "t", partition: 0, key: "k", value: "v" }]), [
      0,
    ]);
    await shared.close();
    assert.equal(fake.opened[0]!.closed, true);
  });
});
