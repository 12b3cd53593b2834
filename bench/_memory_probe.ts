// Loaded into a server by bench/sync_push.ts (node --expose-gc --import):
// on SIGUSR2 it collects garbage, then writes process.memoryUsage() as JSON
// to the file BENCH_MEMORY_FILE names (a temporary file renamed into place,
// so that the bench never reads half of it).
import { renameSync, writeFileSync } from "node:fs";

const file = process.env["BENCH_MEMORY_FILE"];
if (file === undefined) throw new Error("bench/_memory_probe.ts needs BENCH_MEMORY_FILE");
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("bench/_memory_probe.ts needs node --expose-gc");
process.on("SIGUSR2", () => {
  gc();
  writeFileSync(`${file}.tmp`, JSON.stringify(process.memoryUsage()));
  renameSync(`${file}.tmp`, file);
});
