import assert from "node:assert/strict";
import { mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { createApp, readConfig } from "../../lib/app/mod.ts";
import type { ServiceLog } from "../../lib/http/mod.ts";
import { type DatasetSpec, writeDataset } from "../_helpers/datasets.ts";
import { makeRequest } from "../_helpers/http.ts";

const root = mkdtempSync(join(tmpdir(), "tributary-app-reload-"));
after(() => rmSync(root, { recursive: true, force: true }));

const A: DatasetSpec = { doi: "10.25976/appa-0001", name: "Alpha", version: 1, rows: 12 };
const B: DatasetSpec = { doi: "10.25976/appb-0002", name: "Bravo", version: 1, rows: 8 };

function memoryLog(): ServiceLog & { lines: string[] } {
  const lines: string[] = [];
  return {
    lines,
    info: (message) => lines.push(message),
    error: (message) => lines.push(`error: ${message}`),
  };
}

/** A water-only app on a datasets folder of its own. */
function waterApp(name: string) {
  const dir = join(root, name);
  writeDataset(dir, "a", A);
  const log = memoryLog();
  const config = readConfig({
    SERVICES: "water",
    DATA_DIR: dir,
    API_KEYS_FILE: "",
    API_KEYS: "k",
    RATE_LIMIT_PER_SECOND: "0",
    STATE_DIR: "",
  });
  return { dir, log, app: createApp(config, { log }) };
}

async function observationCount(handler: ReturnType<typeof createApp>["handler"]): Promise<number> {
  const response = await handler(
    makeRequest({ path: "/v1/odata/v4/Observations/$count", headers: { "x-api-key": "k" } }),
  );
  return Number(response.body);
}

describe("App.reload()", () => {
  it("is refused before the app has started", async () => {
    const { app } = waterApp("unstarted");
    await assert.rejects(app.reload(), /not started/);
  });

  it("loads the water datasets again and logs what changed", async () => {
    const { dir, log, app } = waterApp("reloads");
    await app.start();
    try {
      assert.equal(await observationCount(app.handler), 12);
      writeDataset(dir, "b", B);
      await app.reload();
      assert.equal(await observationCount(app.handler), 20);
      assert.ok(
        log.lines.some((line) =>
          /^Datasets reloaded from .*: 1 added, 0 replaced, 0 removed, 1 unchanged/.test(line)
        ),
        log.lines.join("\n"),
      );
    } finally {
      await app.close();
    }
  });

  it("rejects when the datasets folder cannot be read, and the datasets before keep serving", async () => {
    const { dir, app } = waterApp("vanishes");
    await app.start();
    try {
      renameSync(dir, `${dir}-moved`);
      await assert.rejects(app.reload(), { code: "ERR_WATER_DATASET" });
      assert.equal(await observationCount(app.handler), 12);
    } finally {
      await app.close();
    }
  });
});
