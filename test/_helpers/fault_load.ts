// Clients of the token and sync service that go on writing while a test
// breaks the database: each signs up (a fresh name after a sign-up that was
// not acknowledged), logs in, and sends patches of one message each, over
// one or more server processes in turn, and every answer is recorded with
// when it was asked and answered. What was acknowledged (a 201 sign-up, a
// 202 patch) is kept, for the test to find afterwards.
import { setTimeout as delay } from "node:timers/promises";
import { message } from "./sync_client.ts";

/** One request and its answer. */
export interface Sample {
  /** What was asked: sign-up, login, patch, snapshot. */
  readonly what: string;
  /** The process asked. */
  readonly url: string;
  /** When it was asked and answered, `performance.now()` milliseconds. */
  readonly start: number;
  readonly end: number;
  /** The status, or 0 when the request failed or gave up after `hangMs`. */
  readonly status: number;
  readonly retryAfter: string | null;
  /** The answer's start, for a report. */
  readonly body: string;
}

/** An account whose sign-up was answered 201, and its patches answered 202. */
export interface Account {
  readonly username: string;
  /** Message uuids and their tickets. */
  readonly patches: Map<string, string>;
}

/** Options of {@linkcode startFaultLoad}. */
export interface FaultLoadOptions {
  /** The server processes, asked in turn. */
  readonly urls: readonly string[];
  /** Clients writing at once. */
  readonly clients: number;
  /** Names start with it: `<prefix>-<client>-<attempt>`. */
  readonly prefix: string;
  readonly password: string;
  /** Each client's pause between requests, milliseconds. */
  readonly pauseMs: number;
  /** A request not answered by then is given up (recorded with status 0). */
  readonly hangMs: number;
  /**
   * Requests a client sends for an account before it signs up another,
   * answered or not. Clients sign up on different turns (client i when
   * turn + i × the number of URLs is a multiple of it), so that some client
   * signs up in any stretch of the run, a fault's too, not all of them at
   * once; each through the URL it would ask then, so every process takes
   * sign-ups (client i through URL i modulo their number, when this is a
   * multiple of it).
   * @default {Infinity}
   */
  readonly turnsPerAccount?: number;
}

/** Clients at work, until stopped. */
export interface FaultLoad {
  readonly samples: Sample[];
  readonly accounts: Account[];
  /** Lets each client finish its request, then stops them. */
  stop(): Promise<void>;
}

interface Reply {
  readonly status: number;
  readonly retryAfter: string | null;
  readonly body: string;
}

/**
 * Starts the clients.
 * @param options the processes, how many clients, and their pace
 * @returns the clients at work and what they recorded so far
 */
export function startFaultLoad(options: FaultLoadOptions): FaultLoad {
  const samples: Sample[] = [];
  const accounts: Account[] = [];
  let stopping = false;
  const turnsPerAccount = options.turnsPerAccount ?? Number.POSITIVE_INFINITY;
  let serial = 0;

  async function ask(what: string, url: string, path: string, init: RequestInit): Promise<Reply> {
    const start = performance.now();
    let reply: Reply;
    try {
      const response = await fetch(`${url}${path}`, {
        ...init,
        signal: AbortSignal.timeout(options.hangMs),
      });
      reply = {
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        body: await response.text(),
      };
    } catch (error) {
      reply = { status: 0, retryAfter: null, body: String(error) };
    }
    samples.push({
      what,
      url,
      start,
      end: performance.now(),
      ...reply,
      body: reply.body.slice(0, 300),
    });
    return reply;
  }

  const form = (fields: Record<string, string>): RequestInit => ({
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams(fields).toString(),
  });

  async function client(index: number): Promise<void> {
    let account: Account | undefined;
    let access: string | undefined;
    let signUpToken: string | undefined;
    let attempt = 0;
    for (let turn = 0; !stopping && turn < 1_000_000; turn++) {
      const url = options.urls[(index + turn) % options.urls.length]!;
      // A round of ten turns: a login, a snapshot, patches, and now and then a sign-up in place of
      // one of them (see turnsPerAccount); a login follows it. Each step is asked in its
      // turn whatever the last answers were (a failed login keeps the token before it), so that
      // every kind of request goes on during a fault.
      const step = turn % 10;
      if (signUpToken === undefined) {
        const reply = await ask("sign-up token", url, "/oauth2/token", {
          ...form({ grant_type: "client_credentials", scope: "SignUp" }),
          headers: {
            "content-type": "application/x-www-form-urlencoded",
            authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
          },
        });
        if (reply.status === 200) {
          signUpToken = (JSON.parse(reply.body) as { access_token: string }).access_token;
        }
      } else if (
        account === undefined ||
        (turn > 0 && (turn + index * options.urls.length) % turnsPerAccount === 0)
      ) {
        const username = `${options.prefix}-${index}-${++attempt}`;
        const reply = await ask("sign-up", url, "/api/v2/sign-up", {
          method: "POST",
          headers: { authorization: `Bearer ${signUpToken}`, "content-type": "application/json" },
          body: JSON.stringify({ username, password: options.password }),
        });
        // Not acknowledged: a fresh name next time (this one may or may not exist).
        if (reply.status === 201) {
          accounts.push(account = { username, patches: new Map() });
          access = undefined;
        }
        if (reply.status === 401) signUpToken = undefined;
      } else if (access === undefined || step === 5) {
        const reply = await ask(
          "login",
          url,
          "/oauth2/token",
          form({
            grant_type: "password",
            client_id: "demo-app",
            username: account.username,
            password: options.password,
            scope: "UserActivity",
          }),
        );
        if (reply.status === 200) {
          access = (JSON.parse(reply.body) as { access_token: string }).access_token;
        }
      } else if (step === 9) {
        const reply = await ask("snapshot", url, "/api/v2/sync/user", {
          headers: { authorization: `Bearer ${access}` },
        });
        if (reply.status === 401) access = undefined;
      } else {
        const n = ++serial;
        const body = { objects: { messages: [message(index * 1_000_000 + n)] }, serial: n };
        const reply = await ask("patch", url, "/api/v2/sync/user", {
          method: "POST",
          headers: { authorization: `Bearer ${access}`, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        if (reply.status === 202) {
          const ticket = (JSON.parse(reply.body) as { ticket: { uuid: string } }).ticket.uuid;
          account.patches.set(message(index * 1_000_000 + n)["uuid"] as string, ticket);
        }
        if (reply.status === 401) access = undefined;
      }
      await delay(options.pauseMs);
    }
  }

  const running = Array.from({ length: options.clients }, (_, index) => client(index));
  return {
    samples,
    accounts,
    async stop() {
      stopping = true;
      await Promise.all(running);
    },
  };
}

/** A fault's window, `performance.now()` milliseconds. */
export interface FaultWindow {
  readonly from: number;
  readonly to: number;
}

/**
 * What is wrong with the answers around faults:
 * - an answer given while a fault was on, to a request asked while it was,
 *   that is not a 503 with `Retry-After`; an answer given while a fault was
 *   on that came more than `deadlineMs` after the request was asked or the
 *   fault began, whichever was later (what the fault cost it);
 * - a request still waiting when a fault ended that had waited longer than
 *   `deadlineMs` of the fault (held by it, answered only once it was over);
 * - any status but 200, 201, 202 and 503 (or 503 without `Retry-After`), or a
 *   request that failed or hung, at any time.
 * Answers outside the faults have no time limit here: on a loaded machine,
 * the time of a normal request is not the test's to judge.
 * @param samples the answers
 * @param faults when the faults were on
 * @param deadlineMs the longest a fault may cost a request
 * @returns one line per wrong answer
 */
export function wrongAnswers(
  samples: readonly Sample[],
  faults: readonly FaultWindow[],
  deadlineMs: number,
): string[] {
  const expected = new Set([200, 201, 202, 503]);
  const origin = faults[0]?.from ?? 0;
  const wrong: string[] = [];
  for (const sample of samples) {
    const at = `${sample.what} asked ${
      ((sample.start - origin) / 1000).toFixed(1)
    } s after the first fault began, answered in ${(sample.end - sample.start).toFixed(0)} ms`;
    if (!expected.has(sample.status)) wrong.push(`${at}: ${sample.status} ${sample.body}`);
    else if (sample.status === 503 && sample.retryAfter === null) {
      wrong.push(`${at}: 503 without Retry-After`);
    }
    for (const fault of faults) {
      const since = Math.max(sample.start, fault.from);
      if (sample.end >= fault.from && sample.end <= fault.to) {
        // One in flight when the fault began may have had its answer from the database already.
        if (sample.status !== 503 && sample.start >= fault.from) {
          wrong.push(`${at}: ${sample.status} while the fault was on`);
        }
        if (sample.end - since > deadlineMs) {
          wrong.push(
            `${at}: ${
              (sample.end - since).toFixed(0)
            } ms after the fault began or the request was asked`,
          );
        }
      } else if (
        sample.start < fault.to && sample.end > fault.to && fault.to - since > deadlineMs
      ) {
        wrong.push(
          `${at}: held by the fault (waiting ${
            (fault.to - since).toFixed(0)
          } ms of it), answered ${sample.status} only after it ended`,
        );
      }
    }
  }
  return wrong;
}

/**
 * Waits until every acknowledged write is found through `url`: each
 * account logs in, and its snapshot holds every message of a patch answered
 * 202 (a queued patch is applied a moment later, so the snapshot is read
 * again until it does, for `withinMs` at most).
 * @param url a server process
 * @param accounts the accounts the clients made
 * @param password their password
 * @param withinMs how long queued work may take to be done
 * @returns what is missing, one line an account (none when everything is there)
 */
export async function missingWrites(
  url: string,
  accounts: readonly Account[],
  password: string,
  withinMs: number,
): Promise<string[]> {
  const give = performance.now() + withinMs;
  const missing: string[] = [];
  for (const account of accounts) {
    let access: string | undefined;
    let lost: string[] = [...account.patches.keys()];
    let last = "";
    while (performance.now() < give) {
      if (access === undefined) {
        const response = await fetch(`${url}/oauth2/token`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: new URLSearchParams({
            grant_type: "password",
            client_id: "demo-app",
            username: account.username,
            password,
            scope: "UserActivity",
          }).toString(),
        });
        const text = await response.text();
        last = `login ${response.status} ${text.slice(0, 200)}`;
        if (response.status === 200) {
          access = (JSON.parse(text) as { access_token: string }).access_token;
        }
      } else {
        const response = await fetch(`${url}/api/v2/sync/user`, {
          headers: { authorization: `Bearer ${access}` },
        });
        const text = await response.text();
        last = `snapshot ${response.status} ${text.slice(0, 200)}`;
        if (response.status === 200) {
          const found = new Set(
            (JSON.parse(text) as { data: { objects: { messages: { uuid: string }[] } } }).data
              .objects.messages.map((m) => m.uuid),
          );
          lost = lost.filter((uuid) => !found.has(uuid));
          if (lost.length === 0) break;
        }
      }
      if (access === undefined || lost.length > 0) await delay(250);
    }
    if (access === undefined) missing.push(`${account.username}: cannot log in (${last})`);
    else if (lost.length > 0) {
      missing.push(
        `${account.username}: ${lost.length} of ${account.patches.size} acknowledged patches missing (${last})`,
      );
    }
  }
  return missing;
}

/**
 * How long answers took before, during and after a fault, for a report:
 * count, median, 99th percentile and longest, by phase (the phase a request was asked in).
 * @param samples the answers
 * @param fault the fault's window
 * @returns one line
 */
export function latencies(samples: readonly Sample[], fault: FaultWindow): string {
  const phases = { before: [] as number[], during: [] as number[], after: [] as number[] };
  for (const sample of samples) {
    const phase = sample.start < fault.from
      ? "before"
      : sample.start < fault.to
      ? "during"
      : "after";
    phases[phase].push(sample.end - sample.start);
  }
  return Object.entries(phases).map(([phase, times]) => {
    times.sort((a, b) => a - b);
    const at = (q: number) =>
      (times.length === 0 ? 0 : times[Math.min(times.length - 1, Math.floor(q * times.length))]!)
        .toFixed(0);
    return `${phase}: ${times.length} answers, median ${at(0.5)} ms, p99 ${at(0.99)} ms, longest ${
      at(1)
    } ms`;
  }).join("; ");
}
