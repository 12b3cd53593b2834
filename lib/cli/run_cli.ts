import { ConfigError } from "../config/mod.ts";
import { parseCommandLine, PROGRAM, renderHelp } from "./command_line.ts";
import { COMMANDS } from "./commands.ts";
import { CliError } from "./errors.ts";
import type { CliIo, CommandSpec } from "./types.ts";

/**
 * Runs one command line: parses it, runs the command with `io`, prints its
 * result (lines, or one JSON document with `--json`) and any error (one line,
 * or `{"error": {"code", "message"}}` with `--json`) on standard error.
 * @param argv the arguments after the program's name, e.g. `["key", "hash"]`
 * @param io the environment, terminal, files, network and database the commands use
 * @param commands the commands to choose from
 * @returns the exit code: 0 done, 1 failed, 2 wrong usage
 * @example
 * ```ts
 * process.exitCode = await runCli(process.argv.slice(2), nodeCliIo());
 * ```
 */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  commands: readonly CommandSpec[] = COMMANDS,
): Promise<number> {
  const end = argv.indexOf("--");
  const json = (end === -1 ? argv : argv.slice(0, end)).includes("--json");
  try {
    const line = parseCommandLine(argv, commands);
    if (line.kind === "help") {
      io.out(`${renderHelp(line.topic, commands).join("\n")}\n`);
      return 0;
    }
    const result = await line.command.run(line.input, io);
    io.out(json ? `${JSON.stringify(result.json, null, 2)}\n` : `${result.lines.join("\n")}\n`);
    return result.exitCode;
  } catch (error) {
    const { code, message } = describe(error);
    const usage = code === "ERR_CLI_USAGE";
    if (json) {
      io.err(`${JSON.stringify({ error: { code, message } })}\n`);
    } else if (usage && argv.length === 0) {
      io.err(`${PROGRAM}: ${message}\n\n${renderHelp([], commands).join("\n")}\n`);
    } else {
      const topic = error instanceof CliError && error.command.length > 0
        ? ` ${error.command.join(" ")}`
        : "";
      io.err(
        `${PROGRAM}: ${message}\n${
          usage ? `Run "${PROGRAM}${topic} --help" for the usage.\n` : ""
        }`,
      );
    }
    return usage ? 2 : 1;
  }
}

/** An error's stable code and its message as the CLI prints it. */
function describe(error: unknown): { code: string; message: string } {
  if (!(error instanceof Error)) return { code: "ERR_CLI_FAILED", message: String(error) };
  const { code } = error as { code?: unknown };
  // The server's configuration errors say what stops a start; here nothing starts.
  const message = error instanceof ConfigError
    ? capitalized(error.message.replace(/^Cannot start: /, ""))
    : error.message;
  return { code: typeof code === "string" ? code : "ERR_CLI_FAILED", message };
}

function capitalized(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
