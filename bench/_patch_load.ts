// Patches through the sync API, as apps send them: each client posts patches
// (a new message each) for its own user, one after another as each is
// accepted, for the given seconds; told to wait (429: its queue is full), it
// follows its last ticket until that patch is applied, then goes on. At the
// end it follows its last ticket to the end (a user's patches apply in order,
// so then all of them are). Prints JSON: the patches applied and the seconds from the first post
// to the last patch applied. Usage (JSON argument):
//   node --import tsx bench/_patch_load.ts '{"targets":[{"url","access"}],"seconds":5}'
// One client per target, each on one keep-alive connection through the lean
// client of _load.ts (fetch costs the client CPU the database shares); loopback addresses only.
import { LeanConnection } from "./_load.ts";

interface Target {
  readonly url: string;
  readonly access: string;
}

const { targets, seconds } = JSON.parse(process.argv[2] ?? "{}") as {
  targets: Target[];
  seconds: number;
};
for (const { url } of targets) {
  if (!/^http:\/\/127\.0\.0\.1:\d+$/.test(url)) {
    throw new Error(`Cannot load ${url}: benchmarks send traffic to loopback addresses only`);
  }
}

let posted = 0;
let refused = 0;
let polls = 0;
let n = 0;
const started = performance.now();
const until = started + seconds * 1000;

async function client(target: Target): Promise<void> {
  const headers = { authorization: `Bearer ${target.access}`, "content-type": "application/json" };
  const connection = new LeanConnection(target.url);
  const base = "/api/v2/sync/user";
  let last: string | undefined;
  /** Follows the last ticket until its patch is applied. */
  const settle = async (): Promise<void> => {
    // Bounded: a patch that does not end within 1,000,000 polls stops the run.
    for (let poll = 0; last !== undefined && poll < 1_000_000; poll++) {
      polls++;
      const answer = await connection.request("GET", `${base}/ticket/${last}`, headers);
      const { ticket } = JSON.parse(answer.body) as { ticket: { status: string } };
      if (ticket.status === "done") return;
      if (ticket.status !== "new" && ticket.status !== "work") {
        throw new Error(`a patch ended ${ticket.status}`);
      }
    }
    if (last !== undefined) throw new Error("the last patch did not end");
  };
  while (performance.now() < until) {
    const id = (n++).toString(16).padStart(12, "0");
    const body = JSON.stringify({
      objects: {
        messages: [{
          uuid: `10000000-0000-4000-8000-${id}`,
          subject: `Patch ${id}`,
          body: "",
          read: false,
          sent_at: "2026-11-24T08:00:00Z",
        }],
      },
      serial: n,
    });
    const answer = await connection.request("POST", base, headers, body);
    if (answer.status === 429) {
      await settle();
      continue;
    }
    if (answer.status !== 202) {
      refused++;
      if (refused === 1) console.error(`refused: ${answer.status} ${answer.body}`);
      continue;
    }
    last = (JSON.parse(answer.body) as { ticket: { uuid: string } }).ticket.uuid;
    posted++;
  }
  await settle();
  connection.close();
}

await Promise.all(targets.map(client));
console.log(
  JSON.stringify({
    applied: posted,
    refused,
    polls,
    seconds: (performance.now() - started) / 1000,
  }),
);
