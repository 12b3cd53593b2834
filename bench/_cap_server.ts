// SAP CAP serving observations for bench/apply: a minimal CAP service with
// an Observations entity (the columns the benchmark's queries read, and a few
// more), deployed to SQLite in memory (@cap-js/sqlite on node:sqlite, CAP's
// default for development), filled with the rows of a JSON file, and served
// by CAP's OData v4 adapter, $apply included, on 127.0.0.1 only. Its request
// log is off (ours keeps its access log on). Node 24 runs it as it is (its
// own type stripping): it imports nothing of the project. Prints
// {"event": "listening", "url": ...} once it listens. Usage:
//   node bench/_cap_server.ts <folder with CAP installed> <rows.json>
// where rows.json is {"Id": [...], "LocationId": [...], ...}, a column each.
import { readFileSync } from "node:fs";
import { createServer, type RequestListener } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { join } from "node:path";

/** The little of CAP's `cds` this uses. */
interface Cds {
  parse: { cdl(source: string): unknown };
  compile: { for: { nodejs(csn: unknown): unknown } };
  env: { requires: Record<string, unknown> };
  connect: { to(name: string): Promise<CapDatabase> };
  deploy(csn: unknown): { to(db: CapDatabase): Promise<unknown> };
  ql: { INSERT: { into(entity: string): { entries(rows: readonly object[]): unknown } } };
  serve(name: string): { from(model: unknown): { in(app: RequestListener): Promise<unknown> } };
  log(id: string, level: string): unknown;
  model: unknown;
}

interface CapDatabase {
  run(query: unknown): Promise<unknown>;
}

const [capDir, rowsFile] = process.argv.slice(2);
if (capDir === undefined || rowsFile === undefined) {
  throw new Error("Usage: node bench/_cap_server.ts <folder with CAP installed> <rows.json>");
}

const CDL = `
namespace water;
entity Observations {
  key Id : Integer;
  LocationId : Integer;
  ActivityStartDate : Date;
  ActivityStartYear : Integer;
  CharacteristicName : String(255);
  ResultValue : Double;
  ResultUnit : String(64);
}
@path: '/odata/v4/water'
service WaterService {
  @readonly entity Observations as projection on water.Observations;
}
`;

// CAP reads its configuration and plugins from its root, the current folder.
process.chdir(capDir);
const require = createRequire(join(capDir, "package.json"));
const cds = require("@sap/cds") as Cds;
const express = require("express") as () => RequestListener;
for (const id of ["cds", "odata", "serve", "deploy", "sqlite", "db", "auth", "app", "server"]) {
  cds.log(id, "warn");
}
cds.env.requires["db"] = {
  kind: "sqlite",
  impl: "@cap-js/sqlite",
  credentials: { url: ":memory:" },
};
const csn = cds.parse.cdl(CDL);
const model = cds.compile.for.nodejs(csn);
cds.model = model;
const db = await cds.connect.to("db");
await cds.deploy(csn).to(db);

const columns = JSON.parse(readFileSync(rowsFile, "utf8")) as Record<string, unknown[]>;
const names = Object.keys(columns);
const count = columns[names[0]!]!.length;
const rows: Record<string, unknown>[] = [];
for (let r = 0; r < count; r++) {
  const row: Record<string, unknown> = {};
  for (const name of names) row[name] = columns[name]![r];
  rows.push(row);
}
for (let start = 0; start < rows.length; start += 10_000) {
  await db.run(cds.ql.INSERT.into("water.Observations").entries(rows.slice(start, start + 10_000)));
}

const app = express();
await cds.serve("WaterService").from(model).in(app);
const server = createServer(app);
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  console.log(JSON.stringify({ event: "listening", url: `http://127.0.0.1:${port}`, rows: count }));
});
for (const signal of ["SIGTERM", "SIGINT"] as const) process.once(signal, () => process.exit(0));
