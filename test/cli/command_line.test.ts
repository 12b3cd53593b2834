// The command line as data: which command a line names, its options and
// arguments, the usage errors, and the help derived from the command specs.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CLI_SETTINGS } from "../../lib/cli/settings.ts";
import { COMMANDS } from "../../lib/cli/commands.ts";
import { type CommandSpec } from "../../lib/cli/types.ts";
import { parseCommandLine, renderHelp } from "../../lib/cli/command_line.ts";
import { listSettings } from "../../lib/config/mod.ts";

function run(
  argv: readonly string[],
): {
  path: string;
  values: Record<string, unknown>;
  positionals: readonly string[];
  json: boolean;
} {
  const line = parseCommandLine(argv, COMMANDS);
  assert.equal(line.kind, "run");
  if (line.kind !== "run") throw new Error("unreachable");
  return {
    path: line.command.path.join(" "),
    values: { ...line.input.values },
    positionals: line.input.positionals,
    json: line.input.json,
  };
}

describe("parseCommandLine()", () => {
  const cases = [
    {
      name: "a command of two words with an argument",
      argv: ["key", "hash", "k"],
      path: "key hash",
      positionals: ["k"],
      json: false,
    },
    {
      name: "a command of one word",
      argv: ["migrate", "--check"],
      path: "migrate",
      positionals: [],
      json: false,
    },
    {
      name: "--json anywhere among the options",
      argv: ["endpoint", "list", "--json", "--server", "http://127.0.0.1:1"],
      path: "endpoint list",
      positionals: [],
      json: true,
    },
    {
      name: "an argument after --, even one starting with a dash",
      argv: ["key", "hash", "--", "-k"],
      path: "key hash",
      positionals: ["-k"],
      json: false,
    },
    {
      name: "an argument that names a folder",
      argv: ["data", "check", "data/datasets"],
      path: "data check",
      positionals: ["data/datasets"],
      json: false,
    },
  ] as const;
  for (const c of cases) {
    it(`reads ${c.name}`, () => {
      const got = run(c.argv);
      assert.deepEqual({ path: got.path, positionals: got.positionals, json: got.json }, {
        path: c.path,
        positionals: c.positionals,
        json: c.json,
      });
    });
  }

  it("keeps every value of a repeatable option", () => {
    const got = run([
      "endpoint",
      "add",
      "--url",
      "https://x.example/in",
      "--event",
      "a.*",
      "--event",
      "b,c",
    ]);
    assert.deepEqual(got.values["event"], ["a.*", "b,c"]);
    assert.equal(got.values["url"], "https://x.example/in");
  });

  const helps = [
    { argv: ["--help"], topic: [] },
    { argv: ["-h"], topic: [] },
    { argv: ["help"], topic: [] },
    { argv: ["help", "endpoint"], topic: ["endpoint"] },
    { argv: ["help", "endpoint", "add"], topic: ["endpoint", "add"] },
    { argv: ["endpoint", "--help"], topic: ["endpoint"] },
    { argv: ["endpoint", "add", "-h"], topic: ["endpoint", "add"] },
    // Help wins over what is missing or wrong.
    { argv: ["client", "add", "--nope", "--help"], topic: ["client", "add"] },
  ] as const;
  for (const c of helps) {
    it(`asks for help with ${c.argv.join(" ")}`, () => {
      assert.deepEqual(parseCommandLine(c.argv, COMMANDS), { kind: "help", topic: c.topic });
    });
  }

  const errors = [
    { name: "no command", argv: [], message: /name a command/ },
    { name: "only an option", argv: ["--json"], message: /name a command/ },
    {
      name: "an unknown command",
      argv: ["frobnicate"],
      message:
        /"frobnicate": it is not a command; the commands are key, client, tenant, endpoint, data, migrate/,
    },
    {
      name: "a group without its command",
      argv: ["endpoint"],
      message: /expected one of add, list, rotate-secret but found nothing/,
    },
    {
      name: "a group with an unknown command",
      argv: ["endpoint", "remove"],
      message: /expected one of add, list, rotate-secret but found "remove"/,
    },
    {
      name: "an unknown option",
      argv: ["key", "hash", "--nope"],
      message: /--nope is not one of its options \(--json, --help\)/,
    },
    { name: "an option without its value", argv: ["endpoint", "add", "--url"], message: /--url/ },
    {
      name: "a missing argument",
      argv: ["client", "add", "--grant", "password"],
      message: /give <client_id>/,
    },
    {
      name: "an extra argument",
      argv: ["key", "hash", "a", "b"],
      message: /"b" is one argument too many/,
    },
    {
      name: "a missing required option",
      argv: ["endpoint", "add", "--url", "https://x.example/in"],
      message: /give --event PATTERN/,
    },
    {
      name: "an empty value",
      argv: ["endpoint", "add", "--url", "", "--event", "*"],
      message: /--url is empty/,
    },
    { name: "a value to a flag", argv: ["migrate", "--check=yes"], message: /--check/ },
    {
      name: "help for an unknown command",
      argv: ["help", "nope"],
      message: /"nope": it is not a command/,
    },
    {
      name: "help for an unknown command of a group",
      argv: ["help", "endpoint", "nope"],
      message: /"endpoint nope" is not a command/,
    },
    {
      name: "--help after an unknown command",
      argv: ["nope", "--help"],
      message: /"nope": it is not a command/,
    },
  ] as const;
  for (const c of errors) {
    it(`refuses ${c.name} as a usage error`, () => {
      assert.throws(() => parseCommandLine(c.argv, COMMANDS), {
        name: "CliError",
        code: "ERR_CLI_USAGE",
        message: c.message,
      });
    });
  }

  it("names the command of a usage error, for pointing to its help", () => {
    assert.throws(() => parseCommandLine(["endpoint", "add"], COMMANDS), (error: unknown) => {
      assert.deepEqual((error as { command: unknown }).command, ["endpoint", "add"]);
      return true;
    });
  });
});

describe("renderHelp()", () => {
  it("lists every command with its arguments and summary", () => {
    const help = renderHelp([], COMMANDS).join("\n");
    for (const command of COMMANDS) {
      assert.ok(help.includes(command.path.join(" ")), command.path.join(" "));
      assert.ok(help.includes(command.summary), command.summary);
    }
    assert.match(help, /Exit codes: 0 done, 1 failed .*, 2 wrong usage/);
  });

  it("lists a group's commands only", () => {
    const help = renderHelp(["endpoint"], COMMANDS).join("\n");
    assert.match(help, /endpoint rotate-secret <id>/);
    assert.doesNotMatch(help, /key hash/);
  });

  for (const command of COMMANDS) {
    it(`shows ${command.path.join(" ")}'s options, settings and examples`, () => {
      const help = renderHelp(command.path, COMMANDS).join("\n");
      assert.ok(help.startsWith(`Usage: tributary ${command.path.join(" ")}`), help.split("\n")[0]);
      for (const [key, spec] of Object.entries(command.options)) {
        assert.ok(help.includes(`--${key}`) && help.includes(spec.doc), key);
      }
      for (const setting of command.settings) {
        assert.ok(help.includes(setting.variables.at(-1)!), setting.variables.join());
      }
      const examples = help.split("\n\nExamples:\n")[1]!.split("\n\n")[0]!.split("\n");
      assert.equal(examples.length, command.examples.length);
      for (const line of examples) {
        // Settings first, then the command, once: `DATABASE_URL=… npx tributary migrate --check`.
        assert.match(
          line,
          new RegExp(`^  (?:[A-Z][A-Z0-9_]*=\\S* )*npx tributary ${command.path.join(" ")}(?: |$)`),
          line,
        );
        assert.equal(line.split("npx tributary").length, 2, line);
      }
      assert.match(help, /--json/);
    });
  }

  it("puts an example's settings before the command it runs", () => {
    const help = renderHelp(["migrate"], COMMANDS);
    assert.ok(
      help.includes(
        "  DATABASE_URL=postgres://tributary@127.0.0.1:5432/tributary npx tributary migrate --check",
      ),
      help.join("\n"),
    );
  });

  const counts = [
    { topic: ["key"], expected: "tributary key: 1 command" },
    {
      topic: ["endpoint"],
      expected: `tributary endpoint: ${
        COMMANDS.filter((command) => command.path[0] === "endpoint").length
      } commands`,
    },
  ] as const;
  for (const c of counts) {
    it(`counts a group's commands in words: ${c.expected}`, () =>
      assert.equal(renderHelp(c.topic, COMMANDS)[0], c.expected));
  }

  it("shows the required options in the usage line", () => {
    const [usage] = renderHelp(["endpoint", "add"], COMMANDS);
    assert.equal(usage, "Usage: tributary endpoint add --url URL --event PATTERN [options]");
  });

  it("works for commands made elsewhere (the table is the only source)", () => {
    const extra: CommandSpec = {
      path: ["hello"],
      summary: "Say hello",
      positionals: [{ name: "name", doc: "who" }],
      options: { loud: { type: "boolean", doc: "shout" } },
      settings: [],
      examples: ["hello world"],
      run: () => Promise.resolve({ exitCode: 0, json: null, lines: [] }),
    };
    assert.deepEqual(renderHelp(["hello"], [extra]).slice(0, 3), [
      "Usage: tributary hello <name> [options]",
      "",
      "Say hello",
    ]);
  });
});

describe("the README's admin command line section", () => {
  const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");
  const start = readme.indexOf("### Admin command line");
  const section = readme.slice(start, readme.indexOf("\n### ", start + 1));

  it("shows every command", () => {
    assert.ok(start !== -1);
    for (const command of COMMANDS) {
      assert.ok(
        section.includes(`npx tributary ${command.path.join(" ")}`),
        command.path.join(" "),
      );
    }
  });

  it("names the variables only the CLI reads", () => {
    for (const setting of listSettings(CLI_SETTINGS)) {
      assert.ok(section.includes(setting.variables[0]!), setting.variables[0]);
    }
  });
});
