// Runs bench/_load.ts in its own process, so that a benchmark can pin the
// client to one CPU (taskset) apart from the servers. It stays up between
// runs, so that each run finds its code compiled (a new process a run spent
// its first tenth of a second warming up, and set a slower pace then): each
// line on standard input is one run's LoadOptions as JSON, and each run's
// LoadResult is printed as a line of JSON, or {"error": message}. It exits
// when its standard input ends. Usage:
//   node --import tsx bench/_load_child.ts
import { createInterface } from "node:readline";
import { type LoadOptions, runLoad } from "./_load.ts";

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === "") continue;
  try {
    console.log(JSON.stringify(await runLoad(JSON.parse(line) as LoadOptions)));
  } catch (error) {
    console.log(JSON.stringify({ error: error instanceof Error ? error.message : String(error) }));
  }
}
