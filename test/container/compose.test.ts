// compose.yaml without Docker: its services, health checks and profile, its
// variables against the server's settings tables, the addresses it gives the
// server against the services beside it, and `docker compose config` (the
// Compose plugin, or Debian's docker-compose) where one is installed. No image
// is pulled and no container started: CI has neither a registry nor an engine.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { appSettings } from "../../lib/app/read_config.ts";
import { readConfig } from "../../lib/app/mod.ts";
import { type ComposeService, readCompose, ROOT, serviceEnv } from "../_helpers/container.ts";

const compose = readCompose();
const services = Object.entries(compose.services);
const SETTINGS = new Set(appSettings().flatMap((setting) => setting.variables));

function service(name: string): ComposeService {
  const found = compose.services[name];
  assert.ok(found !== undefined, `compose.yaml has no service ${name}`);
  return found;
}

/** The services built from this checkout: the server's. */
const servers = services.filter(([, value]) => value.build !== undefined);

/** Redis's port as the redis service starts it (`--port`, else Redis's own default). */
function redisPort(): number {
  const command = service("redis").command ?? [];
  const flag = command.indexOf("--port");
  return flag === -1 ? 6379 : Number(command[flag + 1]);
}

describe("compose.yaml", () => {
  it("starts the server with PostgreSQL and Redis, and adds a Kafka broker and a relay on it under the profile kafka", () => {
    const byProfile = new Map<string, string[]>();
    for (const [name, value] of services) {
      for (const profile of value.profiles ?? [""]) {
        byProfile.set(profile, [...(byProfile.get(profile) ?? []), name]);
      }
    }
    assert.deepEqual(Object.fromEntries(byProfile), {
      "": ["tributary", "postgres", "redis"],
      kafka: ["kafka", "relay-kafka"],
    });
    assert.deepEqual(Object.keys(compose.volumes ?? {}).sort(), ["kafka", "postgres", "redis"]);
  });

  for (const [name, value] of services) {
    it(`gives ${name} a health check that Compose runs in the container`, () => {
      const check = value.healthcheck;
      assert.ok(check?.test !== undefined && check.test.length >= 2, `${name}: healthcheck.test`);
      assert.ok(
        check.test[0] === "CMD" || check.test[0] === "CMD-SHELL",
        `${name}: ${check.test[0]}`,
      );
      for (const field of ["interval", "timeout", "start_period"] as const) {
        assert.match(check[field] ?? "", /^\d+(ms|s|m)$/, `${name}: ${field}`);
      }
      assert.ok(Number.isInteger(check.retries) && check.retries! >= 1, `${name}: retries`);
    });
  }

  it("is what the README and the Dockerfile name in their docker compose commands: a service it has, and the admin command line as the image runs it", () => {
    const texts = {
      README: readFileSync(join(ROOT, "README.md"), "utf8"),
      Dockerfile: readFileSync(join(ROOT, "Dockerfile"), "utf8"),
    };
    let named = 0;
    for (const [file, text] of Object.entries(texts)) {
      for (
        const match of text.matchAll(
          /docker compose (?:exec|run|logs|restart|stop)(?: --?[a-z-]+)* ([a-z][a-z0-9_-]*)( [^`\n]*)?/g,
        )
      ) {
        named++;
        assert.ok(
          compose.services[match[1]!] !== undefined,
          `${file}: ${match[0]} names no service of compose.yaml`,
        );
        if (/tributary /.test(match[2] ?? "")) {
          assert.match(match[2]!, /^ node bin\/tributary\.mjs /, `${file}: ${match[0]}`);
        }
      }
    }
    assert.ok(
      named >= 2,
      "the README and the Dockerfile show the admin command line in the container",
    );
  });

  it("builds both servers from this checkout's Dockerfile as one image", () => {
    assert.deepEqual(servers.map(([name]) => name), ["tributary", "relay-kafka"]);
    for (const [name, value] of servers) {
      assert.equal(value.build, ".", name);
      assert.equal(value.image, servers[0]![1].image, name);
    }
  });

  for (const [name, value] of servers) {
    it(`sets only variables ${name}'s server reads, with values it accepts`, () => {
      const env = serviceEnv(value);
      for (const variable of Object.keys(env)) {
        assert.ok(SETTINGS.has(variable), `${name}: ${variable} is not a setting of the server`);
      }
      readConfig(env);
    });

    it(`checks /health/ready of ${name} (its backends answer) on the port its server listens on, which it publishes on loopback`, () => {
      const port = readConfig(serviceEnv(value)).server.port;
      assert.ok(
        value.healthcheck?.test?.some((part) =>
          part.includes(`'http://127.0.0.1:${port}/health/ready'`)
        ),
        JSON.stringify(value.healthcheck?.test),
      );
      assert.equal(value.ports?.length, 1);
      assert.match(value.ports![0]!, new RegExp(`^127\\.0\\.0\\.1:\\d+:${port}$`));
    });
  }

  it("keeps the server's users, tokens and synced data in the postgres service, with its credentials", () => {
    const url = new URL(readConfig(serviceEnv(service("tributary"))).storage.databaseUrl);
    const postgres = serviceEnv(service("postgres"));
    assert.deepEqual(
      {
        host: url.hostname,
        port: url.port,
        user: url.username,
        password: url.password,
        database: url.pathname.slice(1),
      },
      {
        host: "postgres",
        port: "5432",
        user: postgres["POSTGRES_USER"],
        password: postgres["POSTGRES_PASSWORD"],
        database: postgres["POSTGRES_DB"],
      },
    );
    assert.deepEqual(service("tributary").depends_on?.["postgres"], {
      condition: "service_healthy",
    });
  });

  it("queues the server's webhooks in the redis service, which keeps an append-only file", () => {
    const config = readConfig(serviceEnv(service("tributary")));
    assert.equal(config.relay.storageType, "redis");
    const url = new URL(config.relay.redis.url);
    assert.deepEqual({ host: url.hostname, port: Number(url.port || 6379) }, {
      host: "redis",
      port: redisPort(),
    });
    assert.deepEqual(service("tributary").depends_on?.["redis"], { condition: "service_healthy" });
    const command = service("redis").command ?? [];
    assert.equal(command[command.indexOf("--appendonly") + 1], "yes");
  });

  it("runs the relay alone on the kafka service's advertised listener in the profile", () => {
    const config = readConfig(serviceEnv(service("relay-kafka")));
    assert.deepEqual(config.server.services, ["relay"]);
    assert.equal(config.relay.storageType, "kafka");
    const kafka = serviceEnv(service("kafka"));
    const advertised = (kafka["KAFKA_ADVERTISED_LISTENERS"] ?? "").split(",").map((listener) =>
      listener.replace(/^[A-Z_]+:\/\//, "")
    );
    assert.deepEqual(config.relay.kafka.brokers, advertised);
    assert.deepEqual(service("relay-kafka").depends_on, {
      kafka: { condition: "service_healthy" },
    });
  });

  it("runs Apache Kafka's own image in KRaft mode: one node as broker and controller, no ZooKeeper", () => {
    const kafka = service("kafka");
    assert.match(kafka.image ?? "", /^apache\/kafka:\d+\.\d+\.\d+$/);
    const env = serviceEnv(kafka);
    assert.deepEqual((env["KAFKA_PROCESS_ROLES"] ?? "").split(",").sort(), [
      "broker",
      "controller",
    ]);
    assert.ok(!Object.keys(env).some((name) => name.includes("ZOOKEEPER")));
    const listeners = new Map(
      (env["KAFKA_LISTENERS"] ?? "").split(",").map((listener) => {
        const match = /^([A-Z_]+):\/\/[^:]*:(\d+)$/.exec(listener);
        assert.ok(match !== null, listener);
        return [match[1]!, match[2]!] as const;
      }),
    );
    const controller = env["KAFKA_CONTROLLER_LISTENER_NAMES"] ?? "";
    assert.equal(
      env["KAFKA_CONTROLLER_QUORUM_VOTERS"],
      `${env["KAFKA_NODE_ID"]}@kafka:${listeners.get(controller)}`,
    );
    for (const name of [...listeners.keys()]) {
      assert.match(
        env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"] ?? "",
        new RegExp(`(^|,)${name}:PLAINTEXT(,|$)`),
      );
    }
    const advertised = /^([A-Z_]+):\/\/kafka:(\d+)$/.exec(env["KAFKA_ADVERTISED_LISTENERS"] ?? "");
    assert.ok(
      advertised !== null && listeners.get(advertised[1]!) === advertised[2] &&
        advertised[1] !== controller,
    );
    // A single broker cannot hold more replicas of the offsets topic than one.
    assert.equal(env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"], "1");
  });

  const tool = composeTool();
  it(
    `is accepted by ${
      tool?.join(" ") ?? "docker compose"
    } config, with and without the profile, which refuses a broken copy`,
    { skip: composeSkip(tool) },
    () => {
      assert.ok(
        tool !== undefined,
        "REQUIRE_SERVICES=1 but neither `docker compose` nor `docker-compose` is installed (.ci/run installs Debian's docker-compose)",
      );
      const run = (args: readonly string[], cwd = ROOT) =>
        spawnSync(tool[0]!, [...tool.slice(1), ...args], { cwd, encoding: "utf8" });
      for (const profile of [[], ["--profile", "kafka"]]) {
        const result = run([...profile, "config", "--quiet"]);
        assert.equal(result.status, 0, `${profile.join(" ")}: ${result.stdout}${result.stderr}`);
      }
      // The check can fail: a health check with a field Compose does not know is refused.
      const broken = mkdtempSync(join(tmpdir(), "tributary-compose-"));
      writeFileSync(
        join(broken, "compose.yaml"),
        readFileSync(join(ROOT, "compose.yaml"), "utf8").replace(
          "      retries: 3\n",
          "      retries: 3\n      tries: 3\n",
        ),
      );
      writeFileSync(join(broken, "Dockerfile"), "");
      const refused = run(["config", "--quiet"], broken);
      assert.notEqual(refused.status, 0, "a broken compose.yaml was accepted");
      assert.match(`${refused.stdout}${refused.stderr}`, /tries/);
    },
  );
});

/** `docker compose` (the plugin) or `docker-compose`, whichever answers. */
function composeTool(): string[] | undefined {
  for (const command of [["docker", "compose"], ["docker-compose"]]) {
    if (
      spawnSync(command[0]!, [...command.slice(1), "version"], { stdio: "ignore" }).status === 0
    ) return command;
  }
  return undefined;
}

function composeSkip(tool: string[] | undefined): false | string {
  if (tool !== undefined || process.env["REQUIRE_SERVICES"] === "1") return false;
  return "neither `docker compose` (the Compose plugin) nor `docker-compose` is installed: compose.yaml is checked as YAML only; set REQUIRE_SERVICES=1 to fail instead";
}
