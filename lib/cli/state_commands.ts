import { type JournalReport, STORAGE_SETTINGS } from "../storage/mod.ts";
import { settingValue, usage } from "./_input.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec } from "./types.ts";

/**
 * `state check [folder]`: reads every journal of the state folder
 * (`STATE_DIR`) without changing anything, and says what a start would do:
 * load it whole, cut a torn tail (keeping its bytes aside), or refuse it as
 * damaged. Exit 1 when a journal is damaged.
 */
export const STATE_CHECK: CommandSpec = {
  path: ["state", "check"],
  summary: "Check the journals of STATE_DIR: whole, a torn tail the next start cuts, or damaged",
  details: [
    "Nothing is changed, so it may run beside the server. A torn tail (a crash while writing) is cut at the next start, its bytes kept beside the log.",
    "Damage (a bad stretch with records after it, a missing or reordered log, a bad snapshot) stops the server's start; `state repair` keeps every whole record. Exits 1 when a journal is damaged.",
  ],
  positionals: [{ name: "folder", optional: true, doc: "the state folder (default: STATE_DIR)" }],
  options: {},
  settings: [STORAGE_SETTINGS.stateDir],
  examples: [
    "state check",
    "state check /var/lib/tributary --json | jq '.journals[] | select(.status != \"whole\")'",
  ],
  run: (input, io) => runState(input, io, "check"),
};

/**
 * `state repair [folder]`: repairs every damaged journal of the state folder
 * while holding its lock (so the server must be stopped): every whole record
 * is written again in order, the damaged files moved aside as
 * `<file>.damaged-<time>`. Whole and torn journals are left as they are.
 */
export const STATE_REPAIR: CommandSpec = {
  path: ["state", "repair"],
  summary:
    "Repair damaged journals of STATE_DIR, keeping every whole record and moving the damaged files aside",
  details: [
    "Stop the server first: the repair holds the folder's lock, and is refused while a running process holds it.",
    "Nothing is deleted: the damaged files are renamed <file>.damaged-<time>. Records that were in damaged stretches are lost; the report counts what is kept.",
  ],
  positionals: [{ name: "folder", optional: true, doc: "the state folder (default: STATE_DIR)" }],
  options: {},
  settings: [STORAGE_SETTINGS.stateDir],
  examples: ["state repair", "STATE_DIR=/var/lib/tributary state repair --json"],
  run: (input, io) => runState(input, io, "repair"),
};

async function runState(
  input: CommandInput,
  io: CliIo,
  action: "check" | "repair",
): Promise<CommandResult> {
  const folder = input.positionals[0] ?? settingValue(STORAGE_SETTINGS.stateDir, io.env);
  const spec = action === "check" ? STATE_CHECK : STATE_REPAIR;
  if (folder === "") {
    throw usage(
      spec,
      "STATE_DIR is empty (state kept in memory): name the folder, e.g. `state check var`",
    );
  }
  if (!(await io.isFolder(folder))) throw usage(spec, `there is no folder ${folder}`);
  const journals = action === "check" ? await io.checkState(folder) : await io.repairState(folder);
  const damaged = journals.filter((journal) => journal.status === "damaged");
  const lines = journals.flatMap((journal) => reportLines(journal, action));
  const count = `${journals.length} journal${journals.length === 1 ? "" : "s"}`;
  if (journals.length === 0) lines.push(`${folder}: no journals`);
  else if (action === "check") {
    lines.push(
      `${folder}: ${count}, ${damaged.length} damaged${
        damaged.length > 0 ? ": stop the server and run `npx tributary state repair`" : ""
      }`,
    );
  } else lines.push(`${folder}: ${damaged.length} of ${count} repaired`);
  return {
    exitCode: action === "check" && damaged.length > 0 ? 1 : 0,
    json: { folder, journals },
    lines,
  };
}

/** "1 record", "2 records". */
function records(count: number): string {
  return `${count} whole record${count === 1 ? "" : "s"}`;
}

function reportLines(journal: JournalReport, action: "check" | "repair"): string[] {
  const snapshot = journal.snapshot ? "a snapshot and " : "";
  switch (journal.status) {
    case "whole":
      return [`ok       ${journal.name}: ${snapshot}${records(journal.records)}`];
    case "torn":
      return [
        `torn     ${journal.name}: ${snapshot}${records(journal.records)}; ${
          journal.torn!.file
        } ends mid-record at byte ${journal.torn!.offset} (${
          journal.torn!.reason
        }): the next start cuts the ${journal.torn!.bytes} bytes there and keeps them beside it`,
      ];
    case "damaged":
      return [
        `${action === "check" ? "DAMAGED " : "REPAIRED"} ${journal.name}: ${
          records(journal.repairable)
        } ${action === "check" ? "a repair keeps" : "kept"}`,
        ...journal.damage.map((damage) =>
          `  ${damage.file}${
            damage.bytes > 0 || damage.offset > 0
              ? ` at byte ${damage.offset} (${damage.bytes} bytes)`
              : ""
          }: ${damage.reason}` +
          (damage.recordsAfter > 0 ? `; ${records(damage.recordsAfter)} after it` : "")
        ),
        ...journal.movedAside.map((file) => `  moved aside: ${file}`),
      ];
  }
}
