// SAP CAP for bench/apply, installed from the npm registry on first use and
// kept (in .bench-data/, ignored by git): @sap/cds and @cap-js/sqlite at
// pinned versions in .bench-data/cap, and a Node 24 in .bench-data/node24
// when NODE24_BIN does not name one (CAP 10 needs Node 22 or later; its
// SQLite adapter then uses node:sqlite, which needs no native build). They
// stay out of the project's dev dependencies: CAP comes under the SAP
// Developer License, not an open source one, and only this benchmark runs it.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BENCH_DIR } from "./_data.ts";

/** The CAP packages and their versions. */
export const CAP_PACKAGES: Readonly<Record<string, string>> = {
  "@sap/cds": "10.1.1",
  "@cap-js/sqlite": "3.1.1",
};

/** Where CAP is installed, and the Node that runs it. */
export interface CapInstall {
  /** The folder whose node_modules holds CAP. */
  readonly dir: string;
  /** A Node 22 or later. */
  readonly node: string;
}

/**
 * Installs CAP (and a Node 24 unless NODE24_BIN names one) once, and finds them.
 * @returns the folder and the Node binary
 * @throws {Error} when npm fails, or the Node found is older than 22
 */
export function ensureCap(): CapInstall {
  const dir = installOnce("cap", CAP_PACKAGES);
  const given = process.env["NODE24_BIN"];
  const node = given !== undefined && given !== ""
    ? given
    : join(installOnce("node24", { node: "^24" }), "node_modules", ".bin", "node");
  const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout?.trim() ?? "";
  const major = Number(/^v(\d+)\./.exec(version)?.[1]);
  if (!(major >= 22)) {
    throw new Error(
      `Cannot run CAP with ${node} (${version || "not found"}): it needs Node 22 or later`,
    );
  }
  return { dir, node };
}

/** Installs packages into .bench-data/<name> unless they are there already; returns the folder. */
function installOnce(name: string, dependencies: Readonly<Record<string, string>>): string {
  const dir = join(BENCH_DIR, name);
  const manifest = JSON.stringify({ private: true, dependencies }, null, 2);
  const marker = join(dir, "installed.json");
  if (existsSync(marker) && readFileSync(marker, "utf8") === manifest) return dir;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "package.json"), manifest);
  const list = Object.entries(dependencies).map(([pkg, version]) => `${pkg}@${version}`);
  console.error(`installing ${list.join(", ")} in ${dir} (once; later runs reuse it)`);
  const npm = spawnSync("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error"], {
    cwd: dir,
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (npm.status !== 0) {
    throw new Error(`Cannot install ${list.join(", ")}: npm exited ${npm.status}`);
  }
  writeFileSync(marker, manifest);
  return dir;
}
