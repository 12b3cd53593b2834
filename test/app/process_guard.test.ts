import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { EventEmitter } from "node:events";
import { join } from "node:path";
import { describe, it } from "node:test";
import { ProcessGuard } from "../../lib/app/process_guard.ts";

const ROOT = join(import.meta.dirname, "..", "..");

function harness(notReadyMs = 60_000) {
  let time = 1000;
  const lines: { message: string; error: unknown }[] = [];
  const guard = new ProcessGuard({
    log: { error: (message, error) => void lines.push({ message, error }) },
    now: () => time,
    notReadyMs,
  });
  return { guard, lines, advance: (ms: number) => void (time += ms) };
}

describe("ProcessGuard", () => {
  it("turns an unhandled rejection into an error line and a failing probe that names it", async () => {
    const { guard, lines, advance } = harness();
    const target = new EventEmitter();
    guard.install(target);
    await guard.probe.check();
    const error = new Error("Cannot reach the database now: connect ECONNREFUSED");
    target.emit("unhandledRejection", error);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!.message, /^Unhandled rejection/);
    assert.equal(lines[0]!.error, error);
    advance(5000);
    await assert.rejects(guard.probe.check(), (failure: Error) => {
      assert.match(
        failure.message,
        /^an unhandled rejection, the last 5 s ago \(Error: Cannot reach the database now: connect ECONNREFUSED\)/,
      );
      return true;
    });
    assert.equal(guard.probe.part, "process");
  });

  it("passes again once notReadyMs have gone by without another", async () => {
    const { guard, advance } = harness(10_000);
    guard.rejected(new Error("boom"));
    advance(9999);
    await assert.rejects(guard.probe.check());
    guard.rejected(new Error("boom"));
    advance(9999);
    await assert.rejects(
      guard.probe.check(),
      /^Error: 2 unhandled rejections|2 unhandled rejections/,
    );
    advance(1);
    await guard.probe.check();
  });

  it("writes the first of a run of one failure and counts the repeats", async () => {
    const { guard, lines, advance } = harness(10_000);
    for (let i = 0; i < 50; i++) {
      guard.rejected(new Error("same"));
      advance(100);
    }
    guard.rejected("another reason");
    assert.deepEqual(lines.map((line) => String((line.error as Error).message ?? line.error)), [
      "same",
      "another reason",
    ]);
    await assert.rejects(guard.probe.check(), /51 unhandled rejections/);
    advance(10_000);
    guard.rejected(new Error("same"));
    assert.equal(lines.length, 3, "written again after notReadyMs");
  });

  it("stops listening when uninstalled", () => {
    const { guard, lines } = harness();
    const target = new EventEmitter();
    const uninstall = guard.install(target);
    uninstall();
    assert.equal(target.listenerCount("unhandledRejection"), 0);
    assert.equal(lines.length, 0);
  });

  it("keeps a real process alive through a rejection nothing handles", () => {
    // Without the guard, Node ends the process with code 1 at the rejection.
    const script = `
      const { ProcessGuard } = await import("./lib/app/process_guard.ts");
      const errors = [];
      const guard = new ProcessGuard({ log: { error: (message) => errors.push(message) }, now: () => performance.now() });
      if (process.argv[1] === "guarded") guard.install(process);
      Promise.reject(new Error("nobody handles this"));
      await new Promise((resolve) => setTimeout(resolve, 50));
      const probe = await guard.probe.check().then(() => "ready", (error) => error.message);
      console.log(JSON.stringify({ errors, probe }));
    `;
    const run = (mode: string) =>
      spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script, mode], {
        cwd: ROOT,
        encoding: "utf8",
      });
    const guarded = run("guarded");
    assert.equal(guarded.status, 0, guarded.stderr);
    const report = JSON.parse(guarded.stdout) as { errors: string[]; probe: string };
    assert.equal(report.errors.length, 1);
    assert.match(
      report.probe,
      /an unhandled rejection, the last 0 s ago \(Error: nobody handles this\)/,
    );
    const bare = run("bare");
    assert.equal(bare.status, 1, "the same script without the guard ends at the rejection");
    assert.match(bare.stderr, /nobody handles this/);
  });
});
