// Holds many change streams open (GET /api/v2/sync/user/changes), as many
// devices would, for bench/sync_push.ts: `perTarget` streams for each
// target (a server and a user's access token), opened at most 200 at a time
// through node:http agents with keep-alive and no socket limit. Once every
// stream has had its first event (the head, announced at once), it prints
// {"opened", "seconds"}. Then, on its standard input, one command a line:
// - `arm`: from now on, the next revision each stream hears is counted
//   (answers {"armed": n});
// - `await <ms>`: waits until every stream has heard a revision since `arm`,
//   or `ms` have passed; answers {"heard", "missing", "last"}, `last` the
//   epoch milliseconds (performance.timeOrigin + now) the last one came;
// - `close`: ends every stream and exits.
// Usage: node --import tsx bench/_streams.ts '{"targets":[{"url","access"}],"perTarget":1}'
// Loopback addresses only.
import { Agent, get, type IncomingMessage } from "node:http";
import { createInterface } from "node:readline";

interface Target {
  readonly url: string;
  readonly access: string;
}

/** One stream's state: the newest serial heard, and when it heard one after `arm`. */
interface Held {
  serial: number;
  armedAt: number | undefined;
  heardAt: number | undefined;
  response: IncomingMessage | undefined;
}

const OPENING_AT_ONCE = 200;
const { targets, perTarget } = JSON.parse(process.argv[2] ?? "{}") as {
  targets: Target[];
  perTarget: number;
};
for (const { url } of targets) {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) {
    throw new Error(`Cannot open streams to ${url}: benchmarks use loopback addresses only`);
  }
}

const epoch = (): number => performance.timeOrigin + performance.now();
const agents = new Map<string, Agent>();
const held: Held[] = [];
let armed = false;
let waiter: (() => void) | undefined;
let heard = 0;

/** Opens one stream; resolves at its first event. */
function open(target: Target): Promise<void> {
  let agent = agents.get(target.url);
  if (agent === undefined) {
    agent = new Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 16 });
    agents.set(target.url, agent);
  }
  const stream: Held = { serial: 0, armedAt: undefined, heardAt: undefined, response: undefined };
  held.push(stream);
  return new Promise((resolve, reject) => {
    const request = get(`${target.url}/api/v2/sync/user/changes`, {
      agent,
      headers: { authorization: `Bearer ${target.access}`, accept: "text/event-stream" },
    }, (response) => {
      stream.response = response;
      if (response.statusCode !== 200) {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => (body += chunk));
        response.on(
          "end",
          () => reject(new Error(`stream refused: ${response.statusCode} ${body}`)),
        );
        return;
      }
      response.setEncoding("utf8");
      let buffer = "";
      response.on("data", (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(block);
          if (data === null) continue;
          stream.serial = (JSON.parse(data[1]!) as { serial: number }).serial;
          if (stream.armedAt !== undefined && stream.heardAt === undefined) {
            stream.heardAt = epoch();
            heard++;
            if (heard === held.length) waiter?.();
          }
          resolve();
        }
      });
      response.on("error", reject);
      response.on("end", () => reject(new Error("a stream ended before its first event")));
    });
    request.on("error", reject);
  });
}

const started = performance.now();
const queue = targets.flatMap((target) => Array.from({ length: perTarget }, () => target));
await Promise.all(
  Array.from({ length: Math.min(OPENING_AT_ONCE, queue.length) }, async () => {
    for (let target = queue.pop(); target !== undefined; target = queue.pop()) await open(target);
  }),
);
console.log(
  JSON.stringify({ opened: held.length, seconds: (performance.now() - started) / 1000 }),
);

for await (const line of createInterface({ input: process.stdin })) {
  const [command, argument] = line.trim().split(" ");
  if (command === "arm") {
    heard = 0;
    for (const stream of held) {
      stream.armedAt = epoch();
      stream.heardAt = undefined;
    }
    armed = true;
    console.log(JSON.stringify({ armed: held.length }));
  } else if (command === "await" && armed) {
    if (heard < held.length) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Number(argument));
        waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      waiter = undefined;
    }
    const times = held.flatMap((stream) => (stream.heardAt === undefined ? [] : [stream.heardAt]));
    console.log(JSON.stringify({
      heard: times.length,
      missing: held.length - times.length,
      last: times.reduce((a, b) => Math.max(a, b), 0),
    }));
  } else if (command === "close") {
    break;
  }
}
for (const stream of held) stream.response?.destroy();
for (const agent of agents.values()) agent.destroy();
process.exit(0);
