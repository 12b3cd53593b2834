// The Dockerfile without Docker (CI has no engine and reaches no image
// registry): its stages, user and command read from the file, the build
// context as .dockerignore makes it, and the build replayed on the host: the
// same npm command, the same copies, the same chown, into a folder that stands
// for the image. The server is then started from that folder as the image's
// command would start it, as the image's user, by Node of the image's major
// version, with the environment compose.yaml gives it, against a PostgreSQL,
// a Redis and a Kafka mock cluster the tests start. What this cannot prove:
// the base image itself, and Docker's networking.
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { readConfig } from "../../lib/app/mod.ts";
import { kafkaConfigTopic } from "../../lib/relay/kafka/kafka_config_store.ts";
import { kafkaTopics } from "../../lib/relay/kafka/kafka_queue.ts";
import {
  contextFiles,
  execForm,
  ignored,
  last,
  parseCopy,
  parseDockerfile,
  parseDockerignore,
  readCompose,
  replayDockerfile,
  type ReplayedImage,
  ROOT,
  serviceEnv,
} from "../_helpers/container.ts";
import { kafkaSkip, startKafka } from "../_helpers/kafka.ts";
import { listeningLine } from "../_helpers/listening.ts";
import { postgresSkip, startPostgres } from "../_helpers/postgres.ts";
import { redisSkip, startRedis } from "../_helpers/redis.ts";
import { node24, node24Skip } from "../_helpers/runtimes.ts";

const DOCKERFILE = readFileSync(join(ROOT, "Dockerfile"), "utf8");
const README = readFileSync(join(ROOT, "README.md"), "utf8");
const PACKAGE = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  engines: { node: string };
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
};
const LOCK = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string }>;
};
const stages = parseDockerfile(DOCKERFILE);
const final = stages.at(-1)!;
const rules = parseDockerignore(readFileSync(join(ROOT, ".dockerignore"), "utf8"));
const context = contextFiles(ROOT, rules);

/** The major version of Node in a stage's base image (`node:24-bookworm-slim` → 24). */
function nodeMajor(image: string): number | undefined {
  const match = /^node:(\d+)(?:[.-][a-z0-9.-]+)?$/.exec(image);
  return match === null ? undefined : Number(match[1]);
}

/** A README section's text, from its heading to the next heading. */
function section(heading: string): string {
  const start = README.indexOf(`\n${heading}\n`);
  assert.notEqual(start, -1, `the README has no section ${heading}`);
  const end = README.slice(start + heading.length + 2).search(/\n#{2,3} /);
  return README.slice(start, end === -1 ? undefined : start + heading.length + 2 + end);
}

describe("Dockerfile", () => {
  it("builds in stages from Node's official image, all of one even-numbered (LTS) line the package supports", () => {
    assert.ok(stages.length >= 2, "multi-stage");
    const majors = new Set(stages.map((stage) => nodeMajor(stage.image)));
    assert.equal(majors.size, 1, [...majors].join(", "));
    const [major] = [...majors];
    assert.ok(major !== undefined && major % 2 === 0, `Node ${major}`);
    assert.ok(major >= Number(/>=\s*(\d+)/.exec(PACKAGE.engines.node)![1]), "engines.node");
  });

  it("runs the server as an unprivileged user of the base image, by number", () => {
    const user = last(final, "USER");
    assert.ok(user !== undefined, "the final stage names a USER");
    assert.match(user.args, /^\d+(:\d+)?$/);
    assert.notEqual(Number(user.args.split(":")[0]), 0);
    assert.ok(
      user.line > Math.max(
        ...final.instructions.filter((i) => i.keyword === "RUN" || i.keyword === "COPY").map((i) =>
          i.line
        ),
      ),
      "USER after the last RUN and COPY",
    );
  });

  it("starts the server with the README's command for the image, which is the README's command for Node 24", () => {
    const cmd = execForm(last(final, "CMD")!).join(" ");
    const stated = /The image's command is `([^`]+)`/.exec(section("### In a container"))?.[1];
    assert.equal(cmd, stated);
    assert.ok(
      README.includes(`Node 24 (\`${cmd}\``),
      `the README runs the server on Node 24 with ${cmd}`,
    );
    // No ENTRYPOINT of its own: the base image's runs the command as it is.
    assert.equal(
      final.instructions.some((instruction) => instruction.keyword === "ENTRYPOINT"),
      false,
    );
  });

  it("copies into the final stage only the server, its sources, the admin command line, the demo data and the clients' packages", () => {
    const copies = final.instructions.filter((instruction) => instruction.keyword === "COPY").map(
      parseCopy,
    );
    const fromContext = copies.filter((copy) => copy.from === undefined).flatMap((copy) =>
      copy.sources
    );
    for (const source of fromContext) {
      assert.match(
        source,
        /^(package\.json|server\.ts|lib|bin|data\/(datasets|api_keys\.json|clients\.json|tenants\.json))$/,
        source,
      );
    }
    const fromStages = copies.filter((copy) => copy.from !== undefined);
    assert.deepEqual(fromStages.map((copy) => copy.sources), [["/app/node_modules"]]);
  });
});

describe(".dockerignore", () => {
  it("sends the builder only the files the Dockerfile copies", () => {
    const sources = stages.flatMap((stage) =>
      stage.instructions.filter((i) => i.keyword === "COPY").map(parseCopy)
    ).filter((copy) => copy.from === undefined).flatMap((copy) => copy.sources);
    const unused = context.filter((file) =>
      !sources.some((source) => file === source || file.startsWith(`${source}/`))
    );
    assert.deepEqual(unused, []);
    for (const source of sources) {
      assert.ok(
        context.some((file) => file === source || file.startsWith(`${source}/`)),
        `${source} is in the context`,
      );
    }
  });

  it("leaves out installed packages, state, builds, tests, benchmarks, scripts, git and the data generator", () => {
    for (
      const path of [
        "node_modules",
        "var",
        "dist",
        "coverage",
        ".bench-data",
        "test",
        "bench",
        "scripts",
        ".git",
        "data/generate.ts",
        "appendonlydir",
        "dump.rdb",
      ]
    ) {
      assert.ok(!context.some((file) => file === path || file.startsWith(`${path}/`)), path);
    }
    assert.ok(context.includes("data/datasets/bow-river-groundwater/data.csv"));
  });

  const cases = [
    {
      name: "a folder's rule covers what is in it",
      patterns: "lib",
      path: "lib/app/mod.ts",
      expected: true,
    },
    { name: "* stays in one segment", patterns: "*.ts", path: "lib/mod.ts", expected: false },
    { name: "** crosses segments", patterns: "**/*.ts", path: "lib/app/mod.ts", expected: true },
    {
      name: "an exception after a rule lets a path back in",
      patterns: "*\n!lib",
      path: "lib/app/mod.ts",
      expected: false,
    },
    {
      name: "the last matching rule decides",
      patterns: "!lib\n*",
      path: "lib/app/mod.ts",
      expected: true,
    },
    {
      name: "an exception for a folder leaves its neighbours out",
      patterns: "*\n!data/datasets",
      path: "data/generate.ts",
      expected: true,
    },
    { name: "dot files match *", patterns: "*", path: ".git/HEAD", expected: true },
  ] as const;
  for (const c of cases) {
    it(`reads patterns as Docker does: ${c.name}`, () =>
      assert.equal(ignored(parseDockerignore(c.patterns), c.path), c.expected));
  }
});

const asRoot = process.getuid?.() === 0;
const required = process.env["REQUIRE_SERVICES"] === "1";
const replaySkip = node24Skip !== false
  ? node24Skip
  : !asRoot && !required
  ? "replaying the image's `RUN chown` and `USER` needs root"
  : false;

describe("the image's build, replayed without Docker", { skip: replaySkip }, () => {
  let work = "";
  let image: ReplayedImage;
  const children: ChildProcess[] = [];

  before(() => {
    assert.ok(node24 !== undefined, "REQUIRE_SERVICES=1 but Node 24 is not installed (NODE24_BIN)");
    assert.ok(asRoot, "REQUIRE_SERVICES=1 but the replay of `RUN chown` and `USER` needs root");
    work = mkdtempSync(join(tmpdir(), "tributary-image-"));
    chmodSync(work, 0o755);
    image = replayDockerfile(DOCKERFILE, context, work);
    // What the base image brings: Node of its major version, where the official image has it.
    mkdirSync(join(image.root, "usr", "local", "bin"), { recursive: true, mode: 0o755 });
    copyFileSync(realpathSync(node24), join(image.root, "usr", "local", "bin", "node"));
    chmodSync(join(image.root, "usr", "local", "bin", "node"), 0o755);
  });

  after(() => {
    for (const child of children) {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
    if (work !== "") rmSync(work, { recursive: true, force: true });
  });

  /** A path inside the image. */
  const at = (...parts: string[]): string => join(image.root, image.workdir, ...parts);

  /** A command of the image resolved on its PATH (the official image's Node is in /usr/local/bin). */
  function resolve(command: string): string {
    const path = join(image.root, "usr", "local", "bin", command);
    assert.ok(existsSync(path), `${command} is not in the image`);
    return path;
  }

  /** Runs a health check's `CMD` as the image's user, with the server's port in place of the one in the file. */
  function healthCheck(test: readonly string[], port: number, inFile: number): number | null {
    assert.equal(test[0], "CMD");
    const [command, ...args] = test.slice(1).map((part) =>
      part.replaceAll(`:${inFile}/`, `:${port}/`)
    );
    const result = spawnSync(resolve(command!), args, {
      cwd: at(),
      uid: image.user?.uid,
      gid: image.user?.gid,
      env: { NODE_V8_COVERAGE: "" },
      timeout: 30_000,
    });
    return result.status;
  }

  /** Starts the image's command from its folder, as its user, with its ENV and `env` over it. */
  async function startImage(
    env: Record<string, string>,
  ): Promise<{ url: string; child: ChildProcess; output: () => string }> {
    const [command, ...args] = image.cmd;
    const child = spawn(resolve(command!), args, {
      cwd: at(),
      uid: image.user?.uid,
      gid: image.user?.gid,
      // Loopback only, on a free port: the tests reach no other address.
      env: {
        PATH: "/usr/local/bin:/usr/bin:/bin",
        ...image.env,
        ...env,
        HOST: "127.0.0.1",
        PORT: "0",
        NODE_V8_COVERAGE: "",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let out = "";
    child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (out += chunk.toString()));
    let url: string | undefined;
    while ((url = listeningLine(out)) === undefined) {
      if (child.exitCode !== null) {
        assert.fail(`the image's command exited ${child.exitCode}:\n${out}`);
      }
      await Promise.race([
        once(child.stdout!, "data"),
        once(child.stderr!, "data"),
        once(child, "exit"),
      ]);
    }
    return { url, child, output: () => out };
  }

  async function stop(child: ChildProcess, output: () => string): Promise<void> {
    child.kill("SIGTERM");
    const [code] = await once(child, "exit");
    assert.equal(code, 0, output());
  }

  it("installs the clients of PostgreSQL, Redis and Kafka at the lockfile's versions and no other package of package.json", () => {
    const modules = at("node_modules");
    for (const name of Object.keys(PACKAGE.peerDependencies)) {
      const installed = JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8")) as {
        version: string;
      };
      assert.equal(installed.version, LOCK.packages[`node_modules/${name}`]?.version, name);
    }
    for (
      const name of Object.keys(PACKAGE.devDependencies).filter((name) =>
        !(name in PACKAGE.peerDependencies)
      )
    ) {
      assert.equal(existsSync(join(modules, name)), false, `${name} is in the image`);
    }
  });

  it("holds the server, its sources and the demo data, owned by root, and a state folder of the image's user", () => {
    assert.deepEqual(readdirSync(at()).sort(), [
      "bin",
      "data",
      "lib",
      "node_modules",
      "package.json",
      "server.ts",
      "var",
    ]);
    assert.deepEqual(readdirSync(at("data")).sort(), [
      "api_keys.json",
      "clients.json",
      "datasets",
      "tenants.json",
    ]);
    assert.ok(existsSync(at("lib", "app", "create_app.ts")));
    for (const path of ["server.ts", "lib", "bin", "node_modules", "data"]) {
      assert.equal(statSync(at(path)).uid, 0, path);
    }
    assert.equal(statSync(at("var")).uid, image.user?.uid);
    assert.notEqual(image.user, undefined);
  });

  it("runs the admin command line on the image's Node, as the image's user", () => {
    const result = spawnSync(resolve("node"), [
      "bin/tributary.mjs",
      "key",
      "hash",
      "--json",
      "demo-key",
    ], {
      cwd: at(),
      uid: image.user?.uid,
      gid: image.user?.gid,
      encoding: "utf8",
      env: { NODE_V8_COVERAGE: "" },
      timeout: 30_000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stdout, /sha256:[0-9a-f]{64}/);
  });

  it("uses a Node of the base image's major version", () => {
    const version = spawnSync(resolve("node"), ["--version"], { encoding: "utf8" }).stdout;
    assert.equal(Number(/^v(\d+)\./.exec(version)?.[1]), nodeMajor(final.image));
  });

  it(
    "serves every service with compose's environment on PostgreSQL and Redis, as the image's user, and passes compose's health check",
    { skip: postgresSkip || redisSkip, timeout: 120_000 },
    async () => {
      const postgres = await startPostgres();
      const redis = await startRedis();
      try {
        const service = readCompose().services["tributary"]!;
        const env = serviceEnv(service);
        // compose.yaml's own addresses of the two, replaced by the tests' servers.
        assert.ok(env["DATABASE_URL"] !== undefined && env["REDIS_URL"] !== undefined);
        const { url, child, output } = await startImage({
          ...env,
          DATABASE_URL: await postgres.database(),
          REDIS_URL: redis.url,
        });
        const port = Number(new URL(url).port);
        assert.equal(
          healthCheck(service.healthcheck!.test!, port, 8000),
          0,
          "compose's health check",
        );
        const health = await fetch(`${url}/health`);
        assert.equal(health.status, 200);
        assert.deepEqual(((await health.json()) as { services: string[] }).services, [
          "water",
          "sync",
          "relay",
        ]);
        assert.deepEqual(await (await fetch(`${url}/health/ready`)).json(), {
          status: "ok",
          services: ["water", "sync", "relay"],
        }, "PostgreSQL and Redis answer");
        const water = await fetch(`${url}/v1/odata/v4/Locations?$top=1&$select=Id`, {
          headers: { "x-api-key": "tributary-demo-key" },
        });
        assert.equal(water.status, 200, "the demo data and keys");
        // The explorer's modules, made in the image by Node's own type stripping: the image has no TypeScript.
        const explorer = await fetch(`${url}/explorer/explorer.js`);
        assert.equal(explorer.status, 200, "the water-data explorer's module");
        assert.match(
          await explorer.text(),
          /^import \{ ApiError, createApiClient \} from "\.\/api_client\.js";$/m,
        );
        const query = await fetch(`${url}/explorer/query.js`);
        assert.equal(query.status, 200, "a module it imports");
        assert.match(await query.text(), /^export function buildFilter\(/m);
        const token = await fetch(`${url}/oauth2/token`, {
          method: "POST",
          headers: {
            authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
            "content-type": "application/x-www-form-urlencoded",
          },
          body: "grant_type=client_credentials&scope=SignUp",
        });
        assert.equal(token.status, 200);
        const { access_token } = (await token.json()) as { access_token: string };
        const signUp = await fetch(`${url}/api/v2/sign-up`, {
          method: "POST",
          headers: { authorization: `Bearer ${access_token}`, "content-type": "application/json" },
          body: JSON.stringify({ username: "ada", password: "correct horse battery" }),
        });
        assert.equal(signUp.status, 201, "a user kept in PostgreSQL");
        const intake = await fetch(`${url}/webhook`, {
          method: "POST",
          headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
          body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
        });
        assert.equal(intake.status, 202, "a webhook queued in Redis");
        // The datasets' snapshots (DATASET_CACHE_DIR) are a cache, not state.
        assert.deepEqual(
          readdirSync(at("var")),
          ["dataset-cache"],
          "nothing kept in STATE_DIR: the state is in PostgreSQL and Redis",
        );
        await stop(child, output);
        assert.notEqual(
          healthCheck(service.healthcheck!.test!, port, 8000),
          0,
          "the health check fails once the server is gone",
        );
      } finally {
        await redis.stop();
        await postgres.stop();
      }
    },
  );

  it("runs the relay on Kafka with compose's relay-kafka environment", {
    skip: kafkaSkip,
    timeout: 120_000,
  }, async () => {
    const kafka = await startKafka();
    try {
      const service = readCompose().services["relay-kafka"]!;
      const env = serviceEnv(service);
      assert.ok(env["KAFKA_BROKER"] !== undefined);
      // The mock cluster refuses the admin call that creates the topics (a real broker takes it):
      // they are made beforehand, as the relay would make them.
      const { topicPrefix, partitions, groupId } = readConfig(env).relay.kafka;
      for (const topic of Object.values(kafkaTopics(topicPrefix))) {
        await kafka.topic(topic, partitions);
      }
      await kafka.topic(kafkaConfigTopic(topicPrefix), 1);
      await kafka.group(groupId);
      const { url, child, output } = await startImage({
        ...env,
        KAFKA_BROKER: kafka.brokers.join(","),
      });
      assert.equal(
        healthCheck(service.healthcheck!.test!, Number(new URL(url).port), 8000),
        0,
        "compose's health check",
      );
      const intake = await fetch(`${url}/webhook`, {
        method: "POST",
        headers: { authorization: "Bearer demo-acme-key", "content-type": "application/json" },
        body: JSON.stringify({ event: "order.created", data: { id: 1 } }),
      });
      assert.equal(intake.status, 202, "a webhook appended to Kafka");
      assert.equal((await fetch(`${url}/v1/odata/v4/Locations`)).status, 404, "the relay alone");
      await stop(child, output);
    } finally {
      await kafka.stop();
    }
  });
});
