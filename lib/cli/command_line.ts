import { parseArgs } from "node:util";
import { count } from "../log/mod.ts";
import { CliError } from "./errors.ts";
import type { CommandInput, CommandSpec, OptionSpec } from "./types.ts";

/** What a command line asks for: a command's help (or the list of commands), or a command to run. */
export type CommandLine =
  | { readonly kind: "help"; readonly topic: readonly string[] }
  | { readonly kind: "run"; readonly command: CommandSpec; readonly input: CommandInput };

/** The name the help shows. */
export const PROGRAM = "tributary";

/** Options every command takes. */
export const COMMON_OPTIONS: Readonly<Record<"json" | "help", OptionSpec>> = {
  json: {
    type: "boolean",
    doc:
      'print the result as one JSON document (and an error as {"error": {"code", "message"}} on standard error)',
  },
  help: { type: "boolean", short: "h", doc: "show the command's help and exit" },
};

/** What the exit codes mean, for the help. */
export const EXIT_CODES = "Exit codes: 0 done, 1 failed (the message says why), 2 wrong usage.";

/**
 * Reads a command line against the commands: the words that name a command,
 * then its options and arguments (`node:util`'s `parseArgs`, strict). `help
 * <command>`, `--help` and `-h` ask for help.
 * @param argv the arguments after the program's name
 * @param commands the commands
 * @returns what to do
 * @throws {CliError} `ERR_CLI_USAGE` for an unknown command or option, a missing or extra argument, or a missing required option
 * @example
 * ```ts
 * parseCommandLine(["key", "hash", "--json"], COMMANDS); // { kind: "run", command: <key hash>, input: { json: true, ... } }
 * ```
 */
export function parseCommandLine(
  argv: readonly string[],
  commands: readonly CommandSpec[],
): CommandLine {
  if (argv[0] === "help") return { kind: "help", topic: topicOf(argv.slice(1), commands) };
  const depth = matchedWords(argv, commands);
  const words = argv.slice(0, depth);
  const command = commands.find((candidate) => sameWords(candidate.path, words));
  const end = argv.indexOf("--");
  const options = end === -1 ? argv : argv.slice(0, end);
  if (options.includes("--help") || options.includes("-h")) {
    if (depth === 0 && argv[0] !== undefined && !argv[0].startsWith("-")) {
      throw unknownCommand(argv[0], commands);
    }
    return { kind: "help", topic: words };
  }
  if (command === undefined) {
    const next = argv[depth];
    if (depth === 0) {
      if (next === undefined || next.startsWith("-")) {
        throw new CliError("ERR_CLI_USAGE", "Cannot run: name a command");
      }
      throw unknownCommand(next, commands);
    }
    const choices = commands.filter((candidate) => startsWith(candidate.path, words)).map((
      candidate,
    ) => candidate.path[depth]);
    const found = next === undefined || next.startsWith("-") ? "nothing" : `"${next}"`;
    throw new CliError(
      "ERR_CLI_USAGE",
      `Cannot run ${words.join(" ")}: expected one of ${choices.join(", ")} but found ${found}`,
      { command: words },
    );
  }
  return { kind: "run", command, input: readInput(command, argv.slice(depth)) };
}

/** How many leading words name a command or a group of commands. */
function matchedWords(argv: readonly string[], commands: readonly CommandSpec[]): number {
  let depth = 0;
  while (depth < argv.length) {
    const words = argv.slice(0, depth + 1);
    if (!commands.some((command) => startsWith(command.path, words))) break;
    depth++;
    if (commands.some((command) => sameWords(command.path, words))) break;
  }
  return depth;
}

function topicOf(words: readonly string[], commands: readonly CommandSpec[]): readonly string[] {
  if (words.length === 0) return [];
  if (!commands.some((command) => startsWith(command.path, words))) {
    if (!commands.some((command) => command.path[0] === words[0])) {
      throw unknownCommand(words[0]!, commands);
    }
    throw new CliError("ERR_CLI_USAGE", `Cannot show help: "${words.join(" ")}" is not a command`, {
      command: words.slice(0, 1),
    });
  }
  return words;
}

function readInput(command: CommandSpec, args: readonly string[]): CommandInput {
  const name = command.path.join(" ");
  const options = { ...command.options, json: COMMON_OPTIONS.json };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: Object.fromEntries(
        Object.entries(options).map(([key, spec]) => [key, {
          type: spec.type,
          ...(spec.multiple === true ? { multiple: true } : {}),
          ...(spec.short === undefined ? {} : { short: spec.short }),
        }]),
      ),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    // parseArgs' codes (ERR_PARSE_ARGS_*) all mean wrong usage; its message on an unknown option is about positionals.
    const unknown = (error as { code?: unknown }).code === "ERR_PARSE_ARGS_UNKNOWN_OPTION"
      ? /'([^']+)'/.exec((error as Error).message)
      : null;
    const why = unknown === null
      ? (error as Error).message
      : `${unknown[1]} is not one of its options (${
        Object.keys(options).map((key) => `--${key}`).join(", ")
      }, --help)`;
    throw new CliError("ERR_CLI_USAGE", `Cannot run ${name}: ${why}`, {
      command: command.path,
      cause: error,
    });
  }
  const values = parsed.values as CommandInput["values"];
  const required = command.positionals.filter((positional) => positional.optional !== true).length;
  const { positionals } = parsed;
  if (positionals.length < required) {
    const missing = command.positionals.slice(positionals.length, required).map((positional) =>
      `<${positional.name}>`
    );
    throw new CliError("ERR_CLI_USAGE", `Cannot run ${name}: give ${missing.join(" ")}`, {
      command: command.path,
    });
  }
  if (positionals.length > command.positionals.length) {
    const extra = positionals.slice(command.positionals.length).map((value) =>
      JSON.stringify(value)
    );
    throw new CliError(
      "ERR_CLI_USAGE",
      `Cannot run ${name}: ${extra.join(", ")} is one argument too many`,
      { command: command.path },
    );
  }
  for (const [key, spec] of Object.entries(command.options)) {
    const value = values[key];
    if (spec.required === true && value === undefined) {
      throw new CliError(
        "ERR_CLI_USAGE",
        `Cannot run ${name}: give --${key}${spec.value === undefined ? "" : ` ${spec.value}`}`,
        { command: command.path },
      );
    }
    if (spec.type === "string" && (value === "" || (Array.isArray(value) && value.includes("")))) {
      throw new CliError("ERR_CLI_USAGE", `Cannot run ${name}: --${key} is empty`, {
        command: command.path,
      });
    }
  }
  return { values, positionals, json: values["json"] === true };
}

function unknownCommand(word: string, commands: readonly CommandSpec[]): CliError {
  const known = [...new Set(commands.map((command) => command.path[0]))].join(", ");
  return new CliError(
    "ERR_CLI_USAGE",
    `Cannot run "${word}": it is not a command; the commands are ${known}`,
  );
}

function startsWith(path: readonly string[], words: readonly string[]): boolean {
  return words.length <= path.length && words.every((word, i) => path[i] === word);
}

function sameWords(path: readonly string[], words: readonly string[]): boolean {
  return path.length === words.length && startsWith(path, words);
}

/**
 * The help of a topic: the list of commands (`[]`), a group's commands
 * (`["endpoint"]`) or one command's usage, options, settings and examples.
 * Derived from the command specs, so it cannot drift from what is parsed.
 * @param topic the words of a command or group; empty for all
 * @param commands the commands
 * @returns the lines
 */
export function renderHelp(topic: readonly string[], commands: readonly CommandSpec[]): string[] {
  const command = commands.find((candidate) => sameWords(candidate.path, topic));
  if (command !== undefined) return commandHelp(command);
  const listed = commands.filter((candidate) => startsWith(candidate.path, topic));
  const lines = [
    topic.length === 0
      ? `${PROGRAM}: the admin command line of the tributary server (API keys, OAuth clients, relay tenants and endpoints, datasets, database schema)`
      : `${PROGRAM} ${topic.join(" ")}: ${count(listed.length, "command")}`,
    "",
    `Usage: ${PROGRAM} ${
      topic.length === 0 ? "<command>" : `${topic.join(" ")} <command>`
    } [options]`,
    "",
    "Commands:",
    ...table(
      listed.map((
        candidate,
      ) => [`${candidate.path.join(" ")}${usageArguments(candidate)}`, candidate.summary]),
    ),
    "",
    "Options of every command:",
    ...table(optionRows(COMMON_OPTIONS)),
    "",
    EXIT_CODES,
    `Settings come from the environment variables the server reads (the README's configuration table).`,
    `Run "${PROGRAM} <command> --help" for a command's options and examples.`,
  ];
  return lines;
}

function commandHelp(command: CommandSpec): string[] {
  const required = Object.entries(command.options)
    .filter(([, spec]) => spec.required === true)
    .map(([key, spec]) => ` --${key}${spec.value === undefined ? "" : ` ${spec.value}`}`)
    .join("");
  const lines = [
    `Usage: ${PROGRAM} ${command.path.join(" ")}${usageArguments(command)}${required} [options]`,
    "",
    command.summary,
    ...(command.details ?? []),
  ];
  if (command.positionals.length > 0) {
    lines.push(
      "",
      "Arguments:",
      ...table(command.positionals.map((positional) => [`<${positional.name}>`, positional.doc])),
    );
  }
  lines.push("", "Options:", ...table(optionRows({ ...command.options, ...COMMON_OPTIONS })));
  if (command.settings.length > 0) {
    lines.push(
      "",
      "Settings (environment variables):",
      ...table(command.settings.map((setting) => [
        setting.variables.join(", "),
        `${setting.doc}${setting.defaultText === "" ? "" : ` (default: ${setting.defaultText})`}`,
      ])),
    );
  }
  if (command.examples.length > 0) {
    lines.push("", "Examples:", ...command.examples.map(exampleLine));
  }
  lines.push("", EXIT_CODES);
  return lines;
}

/** Leading `NAME=value` settings of an example, which go before the command. */
const EXAMPLE_SETTINGS = /^(?:[A-Z][A-Z0-9_]*=\S* +)*/;

/** An example as a user pastes it: `npx tributary` and the words, after any leading `NAME=value` settings. */
function exampleLine(example: string): string {
  const settings = EXAMPLE_SETTINGS.exec(example)?.[0] ?? "";
  return `  ${settings}npx ${PROGRAM} ${example.slice(settings.length)}`;
}

function usageArguments(command: CommandSpec): string {
  return command.positionals.map((
    positional,
  ) => (positional.optional === true ? ` [${positional.name}]` : ` <${positional.name}>`)).join("");
}

function optionRows(options: Readonly<Record<string, OptionSpec>>): [string, string][] {
  return Object.entries(options).map(([key, spec]) => [
    `${spec.short === undefined ? "" : `-${spec.short}, `}--${key}${
      spec.value === undefined ? "" : ` ${spec.value}`
    }`,
    `${spec.doc}${spec.required === true ? "; required" : ""}${
      spec.multiple === true ? "; repeatable, or comma-separated" : ""
    }`,
  ]);
}

function table(rows: readonly (readonly [string, string])[]): string[] {
  const width = Math.min(32, Math.max(0, ...rows.map(([left]) => left.length)));
  return rows.flatMap((
    [left, right],
  ) => (left.length > width
    ? [`  ${left}`, `  ${" ".repeat(width)}  ${right}`]
    : [`  ${left.padEnd(width)}  ${right}`])
  );
}
