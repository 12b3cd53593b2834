// The Dockerfile, .dockerignore and compose.yaml as data, and the image's
// build replayed without Docker: CI has no Docker engine and reaches no image
// registry, so the tests read these files and run what of them runs on the
// host (the build context as .dockerignore filters it, COPY as files copied,
// RUN as shell commands) into a folder that stands for the image.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
} from "node:fs";
import { dirname, join, posix } from "node:path";
import { parse } from "yaml";

export const ROOT = join(import.meta.dirname, "..", "..");

/** One instruction of a Dockerfile, continuation lines joined. */
export interface Instruction {
  readonly keyword: string;
  readonly args: string;
  /** Its first line, from 1. */
  readonly line: number;
}

/** A build stage: its `FROM` and what follows. */
export interface Stage {
  readonly image: string;
  readonly name: string | undefined;
  readonly instructions: readonly Instruction[];
}

/**
 * Splits a Dockerfile into stages of instructions: comment lines dropped,
 * lines ending in a backslash joined with the next.
 * @param text the Dockerfile
 */
export function parseDockerfile(text: string): Stage[] {
  const instructions: Instruction[] = [];
  let pending = "";
  let start = 0;
  text.split("\n").forEach((raw, index) => {
    const line = raw.trimEnd();
    if (/^\s*#/.test(line)) return;
    if (pending === "") {
      if (line.trim() === "") return;
      start = index + 1;
    }
    if (line.endsWith("\\")) {
      pending += `${line.slice(0, -1)} `;
      return;
    }
    const whole = (pending + line).trim();
    pending = "";
    const match = /^(\S+)\s*(.*)$/.exec(whole)!;
    instructions.push({
      keyword: match[1]!.toUpperCase(),
      args: match[2]!.replace(/\s+/g, " "),
      line: start,
    });
  });
  const stages: { image: string; name: string | undefined; instructions: Instruction[] }[] = [];
  for (const instruction of instructions) {
    if (instruction.keyword === "FROM") {
      const [image, as, name] = instruction.args.split(" ");
      stages.push({
        image: image!,
        name: as?.toUpperCase() === "AS" ? name : undefined,
        instructions: [],
      });
    } else {
      const stage = stages.at(-1);
      if (stage === undefined) {
        throw new Error(
          `Cannot read the Dockerfile: ${instruction.keyword} on line ${instruction.line} comes before FROM`,
        );
      }
      stage.instructions.push(instruction);
    }
  }
  return stages;
}

/**
 * The argument vector of an exec-form instruction (`CMD ["node", "server.ts"]`).
 * @throws {Error} for the shell form, which runs through `sh -c`
 */
export function execForm(instruction: Instruction): string[] {
  const parsed: unknown = instruction.args.startsWith("[")
    ? JSON.parse(instruction.args)
    : undefined;
  if (!Array.isArray(parsed) || !parsed.every((part) => typeof part === "string")) {
    throw new Error(
      `${instruction.keyword} on line ${instruction.line} is not in exec form: ${instruction.args}`,
    );
  }
  return parsed;
}

/** The last instruction of a keyword in a stage, if any. */
export function last(stage: Stage, keyword: string): Instruction | undefined {
  return stage.instructions.findLast((instruction) => instruction.keyword === keyword);
}

/** A `COPY`'s flags, sources and destination. */
export interface Copy {
  readonly from: string | undefined;
  readonly chown: string | undefined;
  readonly sources: readonly string[];
  readonly destination: string;
}

/** Reads a `COPY` instruction (shell-word form, no quotes). */
export function parseCopy(instruction: Instruction): Copy {
  const words = instruction.args.split(" ");
  const flags = new Map<string, string>();
  while (words[0]?.startsWith("--") === true) {
    const [flag, value] = words.shift()!.slice(2).split("=");
    flags.set(flag!, value ?? "");
  }
  const unknown = [...flags.keys()].filter((flag) => flag !== "from" && flag !== "chown");
  if (unknown.length > 0 || words.length < 2) {
    throw new Error(`Cannot replay COPY on line ${instruction.line}: ${instruction.args}`);
  }
  return {
    from: flags.get("from"),
    chown: flags.get("chown"),
    sources: words.slice(0, -1),
    destination: words.at(-1)!,
  };
}

/** A .dockerignore rule: its pattern as a regular expression, and whether it is an exception (`!`). */
interface IgnoreRule {
  readonly pattern: string;
  readonly regex: RegExp;
  readonly include: boolean;
}

/**
 * Reads .dockerignore as Docker does: one pattern a line, `#` comments,
 * `!` exceptions, `*` and `?` within a path segment, `**` across them, the
 * last matching rule deciding; a rule that matches a folder covers
 * everything in it.
 */
export function parseDockerignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const include = line.startsWith("!");
    const pattern = posix.normalize((include ? line.slice(1) : line).trim()).replace(
      /^\/+|\/+$/g,
      "",
    );
    let source = "";
    for (let i = 0; i < pattern.length; i++) {
      const char = pattern[i]!;
      if (char === "*" && pattern[i + 1] === "*") {
        source += ".*";
        i++;
        if (pattern[i + 1] === "/") i++;
      } else if (char === "*") source += "[^/]*";
      else if (char === "?") source += "[^/]";
      else source += char.replace(/[.+^${}()|[\]\\]/g, "\\$&");
    }
    rules.push({ pattern, regex: new RegExp(`^${source}$`), include });
  }
  return rules;
}

/** Whether a path (relative, with `/`) is left out of the build context. */
export function ignored(rules: readonly IgnoreRule[], path: string): boolean {
  const parts = path.split("/");
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join("/"));
  let excluded = false;
  for (const rule of rules) {
    if (prefixes.some((prefix) => rule.regex.test(prefix))) excluded = !rule.include;
  }
  return excluded;
}

/**
 * The files of the build context: every file under `root` that .dockerignore
 * lets through, as relative paths. A folder left out whole (no exception
 * could reach into it) is not walked.
 */
export function contextFiles(root: string, rules: readonly IgnoreRule[]): string[] {
  const exceptions = rules.filter((rule) => rule.include).map((rule) => rule.pattern);
  const files: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of readdirSync(join(root, relative), { withFileTypes: true })) {
      const path = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        const reachable = exceptions.some((pattern) =>
          /[*?[]/.test(pattern) || pattern.startsWith(`${path}/`) || pattern === path
        );
        if (ignored(rules, path) && !reachable) continue;
        walk(path);
      } else if (!ignored(rules, path)) {
        files.push(path);
      }
    }
  };
  walk("");
  return files.sort();
}

/** What the replayed image is: a folder standing for its root, and its configuration. */
export interface ReplayedImage {
  /** The folder that stands for the image's `/`. */
  readonly root: string;
  /** The final stage's `WORKDIR`, inside the image. */
  readonly workdir: string;
  /** Its `ENV`. */
  readonly env: Readonly<Record<string, string>>;
  /** Its `USER` as uid and gid, undefined for root. */
  readonly user: { readonly uid: number; readonly gid: number } | undefined;
  /** Its `CMD`. */
  readonly cmd: readonly string[];
  /** The commands its `RUN` lines ran, by stage, with their output. */
  readonly runs: readonly {
    readonly stage: string;
    readonly command: string;
    readonly output: string;
  }[];
}

/**
 * Replays a Dockerfile into `work` without Docker: each stage is a folder
 * standing for its root (empty: the base image cannot be pulled), `WORKDIR`
 * a folder in it, `COPY` copies from the context (filtered by .dockerignore)
 * or from an earlier stage's folder, `RUN` runs its command with `sh -c` in
 * the working folder, with the stage's `ENV` over the host's environment.
 * Must run as root for `RUN chown` to do what it does in the image.
 * @param dockerfile the Dockerfile's text
 * @param context the build context's files, from {@linkcode contextFiles}
 * @param work an empty folder
 * @returns the final stage
 * @throws {Error} naming the instruction that cannot be replayed or failed
 */
export function replayDockerfile(
  dockerfile: string,
  context: readonly string[],
  work: string,
): ReplayedImage {
  const stages = parseDockerfile(dockerfile);
  const roots = new Map<string, string>();
  const runs: { stage: string; command: string; output: string }[] = [];
  let final: ReplayedImage | undefined;
  stages.forEach((stage, index) => {
    const label = stage.name ?? String(index);
    const root = join(work, `stage-${index}`);
    mkdirSync(root, { recursive: true, mode: 0o755 });
    roots.set(label, root);
    roots.set(String(index), root);
    let workdir = "/";
    const env: Record<string, string> = {};
    let user: ReplayedImage["user"];
    let cmd: string[] = [];
    const inside = (path: string): string => join(root, posix.resolve(workdir, path));
    for (const instruction of stage.instructions) {
      switch (instruction.keyword) {
        case "WORKDIR":
          workdir = posix.resolve(workdir, instruction.args);
          mkdirSync(inside("."), { recursive: true, mode: 0o755 });
          break;
        case "ENV": {
          const match = /^([A-Za-z_][A-Za-z0-9_]*)=(\S*)$/.exec(instruction.args);
          if (match === null) {
            throw new Error(
              `Cannot replay ENV on line ${instruction.line}: one NAME=value without spaces, please`,
            );
          }
          env[match[1]!] = match[2]!;
          break;
        }
        case "COPY": {
          const copy = parseCopy(instruction);
          if (copy.chown !== undefined) {
            throw new Error(`Cannot replay COPY --chown on line ${instruction.line}`);
          }
          const from = copy.from === undefined ? undefined : roots.get(copy.from);
          if (copy.from !== undefined && from === undefined) {
            throw new Error(`COPY on line ${instruction.line} names an unknown stage ${copy.from}`);
          }
          const destination = inside(copy.destination);
          if (copy.sources.length > 1 && !copy.destination.endsWith("/")) {
            throw new Error(
              `COPY on line ${instruction.line}: several sources need a destination ending in /`,
            );
          }
          for (const source of copy.sources) {
            if (from !== undefined) {
              const path = join(from, source);
              if (!existsSync(path)) {
                throw new Error(
                  `COPY on line ${instruction.line}: ${source} is not in stage ${copy.from}`,
                );
              }
              copyInto(path, destination, copy.destination.endsWith("/"));
              continue;
            }
            const name = posix.normalize(source).replace(/\/+$/, "");
            const files = context.filter((file) => file === name || file.startsWith(`${name}/`));
            if (files.length === 0) {
              throw new Error(
                `COPY on line ${instruction.line}: ${source} is not in the build context (.dockerignore?)`,
              );
            }
            for (const file of files) {
              const target = file === name
                ? (copy.destination.endsWith("/")
                  ? join(destination, posix.basename(file))
                  : destination)
                : join(destination, file.slice(name.length + 1));
              mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
              copyFileSync(join(ROOT, file), target);
              chmodSync(target, 0o644);
            }
          }
          break;
        }
        case "RUN": {
          if (instruction.args.startsWith("[")) {
            throw new Error(`Cannot replay the exec form of RUN on line ${instruction.line}`);
          }
          // NODE_V8_COVERAGE empty: the build's npm is not the code under test.
          const result = spawnSync("sh", ["-c", instruction.args], {
            cwd: inside("."),
            env: { ...process.env, NODE_V8_COVERAGE: "", ...env },
            encoding: "utf8",
            maxBuffer: 1 << 26,
          });
          const output = `${result.stdout}${result.stderr}`;
          if (result.status !== 0) {
            throw new Error(
              `RUN on line ${instruction.line} failed (${
                result.status ?? result.signal
              }): ${instruction.args}\n${output}`,
            );
          }
          runs.push({ stage: label, command: instruction.args, output });
          break;
        }
        case "USER": {
          const match = /^(\d+)(?::(\d+))?$/.exec(instruction.args);
          if (match === null) {
            throw new Error(
              `Cannot replay USER on line ${instruction.line}: a numeric uid[:gid], please (${instruction.args})`,
            );
          }
          const uid = Number(match[1]);
          user = uid === 0 ? undefined : { uid, gid: Number(match[2] ?? match[1]) };
          break;
        }
        case "CMD":
          cmd = execForm(instruction);
          break;
        case "EXPOSE":
          break;
        default:
          throw new Error(`Cannot replay ${instruction.keyword} on line ${instruction.line}`);
      }
    }
    final = { root, workdir, env, user, cmd, runs };
  });
  if (final === undefined) throw new Error("The Dockerfile has no FROM");
  return final;
}

/** COPY of a path from a stage: a folder's contents into the destination, a file to it (or into it, for a destination ending in /). */
function copyInto(path: string, destination: string, intoFolder: boolean): void {
  if (statSync(path).isDirectory()) {
    mkdirSync(destination, { recursive: true, mode: 0o755 });
    cpSync(path, destination, { recursive: true, verbatimSymlinks: true });
  } else {
    const target = intoFolder ? join(destination, posix.basename(path)) : destination;
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    copyFileSync(path, target);
  }
}

/** A service of compose.yaml, as far as the tests read it. */
export interface ComposeService {
  readonly image?: string;
  readonly build?: string | { readonly context?: string };
  readonly profiles?: readonly string[];
  readonly environment?: Readonly<Record<string, string | number | boolean | null>>;
  readonly ports?: readonly string[];
  readonly command?: readonly string[];
  readonly depends_on?: Readonly<Record<string, { readonly condition?: string }>>;
  readonly healthcheck?: {
    readonly test?: readonly string[];
    readonly interval?: string;
    readonly timeout?: string;
    readonly retries?: number;
    readonly start_period?: string;
  };
  readonly volumes?: readonly string[];
}

/** compose.yaml, parsed. */
export interface Compose {
  readonly services: Readonly<Record<string, ComposeService>>;
  readonly volumes?: Readonly<Record<string, unknown>>;
}

/** Reads compose.yaml from the checkout. */
export function readCompose(): Compose {
  return parse(readFileSync(join(ROOT, "compose.yaml"), "utf8")) as Compose;
}

/** A service's environment as strings, as the container gets it. */
export function serviceEnv(service: ComposeService): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map((
      [name, value],
    ) => [name, value === null ? "" : String(value)]),
  );
}
