import { basename, join, resolve } from "node:path";
import { count } from "../log/mod.ts";
import {
  CsvSyntaxError,
  type DatasetReport,
  type LoadIssue,
  type LoadReport,
  readDatasetMetadata,
  StoreBuilder,
  WATER_SETTINGS,
} from "../water/mod.ts";
import { optionText, settingValue, usage } from "./_input.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec } from "./types.ts";

/**
 * `data check [folder]`: loads a datasets folder (or one dataset's folder) as
 * the water service would, without serving it, and reports every dataset
 * that would not load and every row that would be skipped, with its file,
 * line and column. Exit 1 when there is any.
 */
export const DATA_CHECK: CommandSpec = {
  path: ["data", "check"],
  summary:
    "Check datasets as the server would load them: each bad row with its file, line and column",
  details: [
    "The folder holds one folder per dataset (metadata.json and data.csv), as DATA_DIR does, or is one dataset's folder.",
    "Nothing is served. Exits 1 when a dataset would not load or a row would be skipped.",
  ],
  positionals: [{
    name: "folder",
    optional: true,
    doc: "the datasets folder, or one dataset's folder (default: DATA_DIR)",
  }],
  options: {
    "max-issues": {
      type: "string",
      value: "N",
      doc: "rows reported per data file at most; the rest are counted (default: 100)",
    },
  },
  settings: [WATER_SETTINGS.dataDir],
  examples: [
    "data check data/datasets",
    "data check data/datasets/bow-river-groundwater --json | jq '.datasets[].issues'",
  ],
  run: checkData,
};

async function checkData(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const folder = input.positionals[0] ?? settingValue(WATER_SETTINGS.dataDir, io.env).path;
  const limit = optionText(input, "max-issues");
  const maxIssuesPerFile = limit === undefined ? 100 : Number(limit);
  if (!/^[0-9]+$/.test(limit ?? "0") || maxIssuesPerFile > 1_000_000) {
    throw usage(DATA_CHECK, `--max-issues must be an integer from 0 to 1000000: found "${limit}"`);
  }
  const single = await io.isFile(join(folder, "metadata.json"));
  const report = single
    ? await checkDataset(folder, maxIssuesPerFile, io)
    : (await io.loadDatasets(folder, { maxIssuesPerFile })).report;
  const skipped = report.datasets.reduce((sum, dataset) => sum + dataset.skippedRows, 0);
  const rows = report.datasets.reduce((sum, dataset) => sum + dataset.rows, 0);
  const ok = skipped === 0 && report.failures.length === 0;
  const lines: string[] = [];
  for (const dataset of report.datasets) {
    const skip = dataset.skippedRows === 0 ? "" : `, ${count(dataset.skippedRows, "row")} skipped`;
    lines.push(
      `${dataset.skippedRows === 0 ? "ok" : "BAD"}  ${dataset.folder} (${dataset.doi}): ${
        count(dataset.rows, "observation")
      }, ${count(dataset.locations, "location")}${skip}`,
    );
    for (const issue of dataset.issues) lines.push(`  ${issueLine(issue)}`);
    if (dataset.issues.length < dataset.skippedRows) {
      lines.push(
        `  ... and ${
          count(dataset.skippedRows - dataset.issues.length, "more row", "more rows")
        } (--max-issues)`,
      );
    }
    if (dataset.ignoredColumns.length > 0) {
      lines.push(
        `  note: columns ignored (not DataStream columns): ${dataset.ignoredColumns.join(", ")}`,
      );
    }
  }
  for (const failure of report.failures) lines.push(`NOT LOADED  ${issueLine(failure)}`);
  lines.push(
    `${count(report.datasets.length, "dataset")}, ${count(rows, "observation")} from ${folder}: ` +
      (ok
        ? "no problems"
        : `${count(skipped, "row")} would be skipped, ${
          count(report.failures.length, "dataset")
        } would not load`),
  );
  return {
    exitCode: ok ? 0 : 1,
    json: {
      ok,
      folder,
      rows,
      skippedRows: skipped,
      datasets: report.datasets,
      failures: report.failures,
    },
    lines,
  };
}

/** `file:line:column: message (field)`, leaving out what is not known. */
function issueLine(issue: LoadIssue): string {
  const at = issue.line === 0
    ? ""
    : issue.column === 0
    ? `:${issue.line}`
    : `:${issue.line}:${issue.column}`;
  return `${issue.file}${at}: ${issue.message}${
    issue.field === undefined ? "" : ` (${issue.field})`
  }`;
}

/** One dataset's folder, loaded as `loadDatasets` loads each of a datasets folder's. */
async function checkDataset(
  folder: string,
  maxIssuesPerFile: number,
  io: CliIo,
): Promise<LoadReport> {
  const metadataFile = join(folder, "metadata.json");
  const file = join(folder, "data.csv");
  const name = basename(resolve(folder));
  let input;
  try {
    input = readDatasetMetadata((await io.readText(metadataFile)) ?? "", name);
  } catch (error) {
    return {
      datasets: [],
      failures: [{ file: metadataFile, line: 0, column: 0, message: messageOf(error) }],
    };
  }
  const builder = new StoreBuilder({ maxIssuesPerFile });
  builder.beginDataset(input, file);
  try {
    for await (const chunk of io.readChunks(file)) builder.push(chunk);
    const dataset: DatasetReport = {
      folder: input.folder,
      doi: input.doi,
      ...builder.endDataset(),
    };
    return { datasets: [dataset], failures: [] };
  } catch (error) {
    builder.abortDataset();
    const at = error instanceof CsvSyntaxError
      ? { line: error.line, column: error.column }
      : { line: 0, column: 0 };
    return { datasets: [], failures: [{ file, ...at, message: messageOf(error) }] };
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
