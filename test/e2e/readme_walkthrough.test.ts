// The README's token and sync walk-through, pasted as it is into a shell
// (bash and POSIX sh) against the server started as `npm start` starts it,
// on a free port: every step answers, and the values it keeps in variables
// with jq are the tokens, revision and ticket they should be.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

const ROOT = join(import.meta.dirname, "..", "..");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const DEFAULT_URL = "URL=http://127.0.0.1:8000\n";
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The first shell block of the Quick start's "Token and sync". */
function walkThrough(): string {
  const start = README.indexOf("\n### Token and sync\n", README.indexOf("\n## Quick start\n"));
  const match = /```sh\n([^]*?)```/.exec(README.slice(start));
  assert.ok(
    start !== -1 && match !== null,
    "the README's Quick start has a token and sync walk-through",
  );
  return match[1]!;
}

const missing = ["bash", "sh", "curl", "jq"].filter((tool) =>
  spawnSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" }).status !== 0
);
const skip = missing.length === 0 || process.env["REQUIRE_SERVICES"] === "1"
  ? false
  : `${
    missing.join(", ")
  } not installed (.ci/run installs them); set REQUIRE_SERVICES=1 to fail instead`;

/** What the walk-through leaves in its variables, printed by a line the test adds at its end. */
interface Variables {
  readonly signup: string;
  readonly access: string;
  readonly refresh: string;
  readonly revision: string;
  readonly ticket: string;
  readonly status: string;
}

const TRAILER =
  `jq -cn --arg signup "$SIGNUP_TOKEN" --arg access "$ACCESS_TOKEN" --arg refresh "$REFRESH_TOKEN" \\
  --arg revision "$REVISION" --arg ticket "$TICKET" --arg status "$STATUS" '$ARGS.named'\n`;

describe("the README's token and sync walk-through", { skip }, () => {
  let started: Started;
  let url = "";
  before(async () => {
    assert.deepEqual(missing, [], "REQUIRE_SERVICES=1 but the walk-through's tools are missing");
    started = startServer({});
    url = await listeningUrl(started);
  });
  after(() => started?.child.kill("SIGTERM"));

  async function paste(
    shell: string,
    user: string,
  ): Promise<{ lines: string[]; variables: Variables }> {
    const block = walkThrough();
    assert.ok(block.startsWith(DEFAULT_URL), "the walk-through starts by naming the server's URL");
    // The user name is the one thing a second run on the same server changes: ada is taken by then.
    const script = `URL=${url}\n${
      block.slice(DEFAULT_URL.length).replaceAll('"username": "ada"', `"username": "${user}"`)
    }${TRAILER}`;
    // -e and pipefail: a jq that cannot read an answer stops the paste here, where a person would see it.
    const flags = shell === "bash" ? ["-e", "-u", "-o", "pipefail"] : ["-e", "-u"];
    const { stdout, stderr } = await promisify(execFile)(shell, [...flags, "-c", script], {
      timeout: 60_000,
    });
    assert.equal(stderr, "");
    const lines = stdout.trim().split("\n");
    return { lines, variables: JSON.parse(lines.at(-1)!) as Variables };
  }

  for (const [shell, user] of [["bash", "ada"], ["sh", "grace"]] as const) {
    it(`runs in one paste into ${shell}: sign-up, login, snapshot, patch, ticket, diff and refresh`, async () => {
      const { lines, variables } = await paste(shell, user);
      const text = lines.join("\n");
      assert.match(
        lines[0]!,
        new RegExp(`^\\{"uuid":"[0-9a-f-]{36}","username":"${user}"\\}$`),
        "the sign-up's answer",
      );
      assert.match(variables.signup, TOKEN);
      assert.match(variables.access, TOKEN);
      assert.match(variables.refresh, TOKEN);
      assert.match(variables.revision, UUID);
      assert.match(variables.ticket, UUID);
      assert.equal(variables.status, "done");
      assert.ok(lines.includes("done"), "the ticket's status is printed");
      assert.match(text, /"subject": "Gauge 7 offline"/, "the diff holds the message");
      const pair = JSON.parse(lines.at(-2)!) as {
        access_token: string;
        refresh_token: string;
        scope: string;
      };
      assert.deepEqual([pair.access_token, pair.refresh_token, pair.scope], [
        variables.access,
        variables.refresh,
        "UserActivity",
      ], "the refreshed pair is the one kept");
      // The refreshed token is the user's: it reads the patched context.
      const context = await fetch(`${url}/api/v2/sync/user`, {
        headers: { authorization: `Bearer ${variables.access}` },
      });
      assert.equal(context.status, 200);
      const { data } = (await context.json()) as {
        data: {
          revision: string;
          objects: { me: { username: string }; messages: { subject: string }[] };
        };
      };
      assert.equal(data.objects.me.username, user);
      assert.deepEqual(data.objects.messages.map((message) => message.subject), [
        "Gauge 7 offline",
      ]);
      assert.notEqual(
        data.revision,
        variables.revision,
        "the patch made a revision after the snapshot's",
      );
    });
  }
});

/** The Quick start's water-data examples: the shell block after "With the server running:". */
function waterExamples(): string {
  const start = README.indexOf("With the server running:", README.indexOf("\n## Quick start\n"));
  const match = /```sh\n([^]*?)```/.exec(README.slice(start));
  assert.ok(start !== -1 && match !== null, "the README's Quick start has water-data examples");
  return match[1]!;
}

describe("the README's water-data examples", { skip }, () => {
  let started: Started;
  let url = "";
  before(async () => {
    started = startServer({});
    url = await listeningUrl(started);
  });
  after(() => started?.child.kill("SIGTERM"));

  for (const shell of ["bash", "sh"] as const) {
    it(`answer 200 each, pasted as one block into ${shell} against the default rate limit`, async () => {
      const block = waterExamples();
      const requests = block.split("\n").filter((line) => line.startsWith("curl ")).length;
      assert.ok(requests >= 5, `${requests} examples`);
      assert.ok(block.includes("http://127.0.0.1:8000/"), "the examples name the default address");
      // Each curl also prints its status on a line of its own; nothing else of the block changes.
      const wrapper = `curl() { command curl -sS -w '\\nHTTP_STATUS=%{http_code}\\n' "$@"; }\n`;
      const script = wrapper + block.replaceAll("http://127.0.0.1:8000/", `${url}/`);
      const { stdout, stderr } = await promisify(execFile)(shell, ["-e", "-u", "-c", script], {
        timeout: 60_000,
      });
      assert.equal(stderr, "");
      const statuses = [...stdout.matchAll(/^HTTP_STATUS=(\d+)$/gm)].map((match) => match[1]);
      assert.deepEqual(
        statuses,
        Array.from({ length: requests }, () => "200"),
        stdout.slice(0, 2000),
      );
      assert.match(stdout, /"@odata.count":\d+/, "the count example counts");
    });
  }
});
