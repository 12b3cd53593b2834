// npm run graph: checks the import graph of lib/. Domains (lib/<domain>/)
// stand in layers, each importing only from the layers below it and from
// its own; a domain is reached through its mod.ts (its public names) or its
// _internal.ts (what it shares with the package's other domains alone), never
// through another file; and no file imports itself
// back through others (no cycle, in a domain or across). The pages' browser
// modules (*.browser.ts) are a program of their own, compiled apart: they may
// import the shared browser modules of lib/web/browser/ directly, and of the
// library only the mod.ts of a domain that runs on fetch alone (FETCH_ONLY,
// compiled for the browser with them), and are checked for cycles. Prints
// every breach and exits 1 when there is one; `--dot` prints the domain graph.
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const LIB = join(ROOT, "lib");

/**
 * The layers, lowest first: a domain imports only from the layers below its
 * own (never from a domain beside it in its layer). `accounts` composes the
 * token service and the sync API, which stand side by side, into one module.
 */
export const LAYERS: readonly (readonly string[])[] = [
  // The sync client stands alone: it runs on any platform with `fetch`, so it imports no domain.
  ["crypto", "config", "sync_client"],
  ["log", "storage"],
  ["http"],
  ["metrics", "web", "odata"],
  // The columnar engine runs odata's bound filters: it stands above the language.
  ["columnar"],
  ["water", "auth", "sync", "relay"],
  ["accounts"],
  ["app"],
  ["cli"],
];

/** Every TypeScript file under lib/, relative to it. */
function files(dir = LIB): string[] {
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...files(path));
    else if (entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts")) {
      found.push(relative(LIB, path));
    }
  }
  return found.sort();
}

/** The relative files a file imports (type-only imports included: they are arrows of the design too). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(LIB, file), "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+["'](\.[^"']+)["']/gm)) {
    found.push(relative(LIB, resolve(dirname(join(LIB, file)), match[1]!)));
  }
  for (const match of text.matchAll(/import\(\s*["'](\.[^"']+)["']\s*\)/g)) {
    found.push(relative(LIB, resolve(dirname(join(LIB, file)), match[1]!)));
  }
  return found;
}

/**
 * Domains that run wherever `fetch` does (browsers, React Native): no file of
 * theirs imports a Node module by name (a storage for Node imports it at run
 * time, by a specifier the browser's bundlers leave alone).
 */
export const FETCH_ONLY: readonly string[] = ["sync_client"];

/** The Node modules a file names in an import. */
function nodeImportsOf(file: string): string[] {
  const text = readFileSync(join(LIB, file), "utf8");
  return [
    ...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+["'](node:[^"']+)["']/gm),
    ...text.matchAll(/import\(\s*["'](node:[^"']+)["']\s*\)/g),
  ].map((match) => match[1]!);
}

function domainOf(file: string): string {
  return file.includes(sep) ? file.split(sep)[0]! : "";
}

function layerOf(domain: string): number {
  return LAYERS.findIndex((layer) => layer.includes(domain));
}

/** The breaches of the rules, one line each. */
export function checkGraph(): string[] {
  const breaches: string[] = [];
  const graph = new Map<string, string[]>();
  for (const file of files()) {
    const from = domainOf(file);
    const targets = importsOf(file);
    if (FETCH_ONLY.includes(from)) {
      for (const module of nodeImportsOf(file)) {
        breaches.push(
          `${file} imports ${module}: ${from} runs on fetch alone, without Node's modules`,
        );
      }
    }
    graph.set(file, targets);
    if (file.endsWith(".browser.ts")) {
      for (const target of targets) {
        const fetchOnly = FETCH_ONLY.includes(domainOf(target)) &&
          target.split(sep).slice(1).join(sep) === "mod.ts";
        if (!target.endsWith(".browser.ts") && !fetchOnly) {
          breaches.push(
            `${file} imports ${target}: a page's module imports only browser modules and the mod.ts of a fetch-only domain (${
              FETCH_ONLY.join(", ")
            })`,
          );
        }
      }
      continue;
    }
    for (const target of targets) {
      const to = domainOf(target);
      if (from === "" || to === from) continue;
      if (to === "") {
        breaches.push(`${file} imports ${target}: the root module is for users, not for domains`);
        continue;
      }
      const base = target.split(sep).slice(1).join(sep);
      if (base !== "mod.ts" && base !== "_internal.ts") {
        breaches.push(
          `${file} imports ${target}: another domain is reached through its mod.ts or _internal.ts`,
        );
      }
      const [a, b] = [layerOf(from), layerOf(to)];
      if (a === -1) {
        breaches.push(
          `${file}: the domain ${from} is in no layer (scripts/import_graph.ts LAYERS)`,
        );
      } else if (b === -1) {
        breaches.push(
          `${target}: the domain ${to} is in no layer (scripts/import_graph.ts LAYERS)`,
        );
      } else if (b > a) {
        breaches.push(
          `${file} imports ${target}: ${from} (layer ${a}) may not import from ${to} (layer ${b}), which stands above it`,
        );
      } else if (b === a) {
        breaches.push(
          `${file} imports ${target}: ${from} and ${to} stand in one layer and may not import each other`,
        );
      }
    }
  }
  // Cycles among files: a depth-first search, each cycle reported once.
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const reported = new Set<string>();
  const visit = (file: string): void => {
    state.set(file, "open");
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === "open") {
        const cycle = stack.slice(stack.indexOf(next));
        const key = [...cycle].sort().join(" ");
        if (!reported.has(key)) {
          reported.add(key);
          breaches.push(`a cycle: ${[...cycle, next].join(" -> ")}`);
        }
      } else if (state.get(next) === undefined) {
        visit(next);
      }
    }
    stack.pop();
    state.set(file, "done");
  };
  for (const file of graph.keys()) if (state.get(file) === undefined) visit(file);
  return breaches;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  if (process.argv.includes("--dot")) {
    const arrows = new Set<string>();
    for (const file of files()) {
      for (const target of importsOf(file)) {
        if (domainOf(file) !== domainOf(target) && domainOf(file) !== "") {
          arrows.add(`  "${domainOf(file)}" -> "${domainOf(target)}";`);
        }
      }
    }
    process.stdout.write(`digraph domains {\n${[...arrows].sort().join("\n")}\n}\n`);
  } else {
    const breaches = checkGraph();
    for (const breach of breaches) process.stderr.write(`${breach}\n`);
    process.stdout.write(
      breaches.length === 0
        ? "The import graph keeps its layers and has no cycle\n"
        : `${breaches.length} breaches\n`,
    );
    process.exitCode = breaches.length === 0 ? 0 : 1;
  }
}
