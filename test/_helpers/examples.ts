import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";

/**
 * Runs a documented example in its own process with PORT=0. An example that
 * finishes must exit 0. One that serves (it prints an `http://` URL and keeps
 * running) must answer a request to that URL, then stop on SIGTERM.
 * @param command the runtime
 * @param args its arguments
 * @param cwd where to run it
 * @param env its environment (PORT is set to 0)
 */
export async function runExample(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const child = spawn(command, args, {
    cwd,
    env: { ...env, PORT: "0" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const exited = once(child, "exit") as Promise<[number | null, string | null]>;
  for (;;) {
    const url = /(http:\/\/127\.0\.0\.1:[1-9][0-9]*\S*)/.exec(out)?.[1];
    if (url !== undefined) {
      const response = await fetch(url, { headers: { "x-api-key": "my-secret-key" } });
      assert.ok(response.status < 500, `${args.join(" ")}: ${url} answered ${response.status}`);
      await response.body?.cancel();
      child.kill("SIGTERM");
      await exited;
      return;
    }
    if (child.exitCode !== null) {
      assert.equal(
        child.exitCode,
        0,
        `${args.join(" ")} exited with ${child.exitCode}:\n${out}\n${err}`,
      );
      assert.notEqual(out.trim(), "", `${args.join(" ")} printed nothing`);
      return;
    }
    await Promise.race([once(child.stdout!, "data"), exited]);
  }
}
