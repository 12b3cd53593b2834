// Runs bench/_load.ts in its own process, so that a benchmark can pin the
// client to one CPU (taskset) apart from the servers. Usage:
//   node --import tsx bench/_load_child.ts '<LoadOptions as JSON>'
// Prints the LoadResult as JSON.
import { type LoadOptions, runLoad } from "./_load.ts";

const options = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;
console.log(JSON.stringify(await runLoad(options)));
