import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import {
  choiceSetting,
  ConfigError,
  customSetting,
  integerSetting,
  listSetting,
  listSettings,
  numberSetting,
  pathSetting,
  readConfigFile,
  readConfigPath,
  readSettings,
  redactUrl,
  renderSettingsTable,
  textSetting,
} from "../../lib/config/mod.ts";
import { describeJsonError } from "../../lib/config/describe_json_error.ts";
import { jsonErrorPosition } from "../../lib/config/json_error_position.ts";
import { parseConfigJson } from "../../lib/config/parse_config_json.ts";
import { assertConfigError } from "../_helpers/config.ts";

const TABLE = {
  port: integerSetting(["ALT_PORT", "PORT"], { default: 8000, min: 0, max: 65_535, doc: "port" }),
  ratio: numberSetting("RATIO", { default: 0.5, min: 0, doc: "a ratio" }),
  name: textSetting("NAME", {
    default: "demo",
    pattern: /^[a-z]+$/,
    accepts: "lower-case letters",
    doc: "a name",
  }),
  file: textSetting("FILE", { default: "a.json", emptyMeansNone: true, doc: "a file" }),
  mode: choiceSetting("MODE", {
    choices: ["fast", "safe"] as const,
    default: "safe",
    doc: "the mode",
  }),
  group: {
    items: listSetting("ITEMS", {
      accepts: "numbers",
      item: (entry) => {
        if (!/^[0-9]+$/.test(entry)) throw new RangeError("not a number");
        return Number(entry);
      },
      doc: "some numbers",
    }),
    key: customSetting("KEY", {
      default: "",
      defaultText: "",
      accepts: "a key that starts with k",
      doc: "a key, required with MODE=fast",
      unset: (env) => {
        if (env["MODE"] === "fast") {
          throw new ConfigError("KEY", "Cannot start: MODE=fast needs KEY");
        }
        return "";
      },
      parse: (text) => {
        if (!text.startsWith("k")) throw new Error("it does not start with k");
        return text;
      },
    }),
  },
} as const;

describe("readSettings()", () => {
  it("reads defaults from an empty environment, nested like the table", () => {
    assert.deepEqual(readSettings(TABLE, {}), {
      port: 8000,
      ratio: 0.5,
      name: "demo",
      file: "a.json",
      mode: "safe",
      group: { items: [], key: "" },
    });
  });

  it("reads every kind of value, trimmed", () => {
    const config = readSettings(TABLE, {
      PORT: " 8080 ",
      RATIO: "2.25",
      NAME: " abc ",
      FILE: "b.json",
      MODE: "fast",
      ITEMS: "1, 2,,3",
      KEY: " k1 ",
    });
    assert.deepEqual(config, {
      port: 8080,
      ratio: 2.25,
      name: "abc",
      file: "b.json",
      mode: "fast",
      group: { items: [1, 2, 3], key: "k1" },
    });
  });

  it("reads the first variable that is set, and names it in errors", () => {
    assert.equal(readSettings(TABLE, { ALT_PORT: "9001", PORT: "8001" }).port, 9001);
    assert.equal(readSettings(TABLE, { ALT_PORT: "", PORT: "8001" }).port, 8001);
    assertConfigError(() => readSettings(TABLE, { ALT_PORT: "x", PORT: "8001" }), "ALT_PORT");
  });

  it("treats an empty value as unset, unless empty means none", () => {
    assert.equal(readSettings(TABLE, { NAME: "" }).name, "demo");
    assert.equal(readSettings(TABLE, { FILE: "" }).file, "");
    assert.equal(readSettings(TABLE, { FILE: "  " }).file, "");
  });

  const invalid = [
    { env: { PORT: "-1" }, variable: "PORT", says: "an integer from 0 to 65535" },
    { env: { PORT: "1e3" }, variable: "PORT", says: "an integer from 0 to 65535" },
    { env: { RATIO: "fast" }, variable: "RATIO", says: "a number >= 0" },
    { env: { NAME: "Ab" }, variable: "NAME", says: "lower-case letters" },
    { env: { MODE: "turbo" }, variable: "MODE", says: "fast, safe" },
    { env: { ITEMS: "1,x" }, variable: "ITEMS", says: "entry 2" },
    { env: { KEY: "q" }, variable: "KEY", says: "it does not start with k" },
    { env: { MODE: "fast" }, variable: "KEY", says: "MODE=fast needs KEY" },
  ] as const;
  for (const c of invalid) {
    it(`names ${c.variable} and says "${c.says}" for ${JSON.stringify(c.env)}`, () => {
      assertConfigError(() => readSettings(TABLE, c.env), c.variable, c.says);
    });
  }
});

describe("listSettings()", () => {
  it("lists the settings in declaration order, groups flattened", () => {
    assert.deepEqual(listSettings(TABLE).map((setting) => setting.variables[0]), [
      "ALT_PORT",
      "RATIO",
      "NAME",
      "FILE",
      "MODE",
      "ITEMS",
      "KEY",
    ]);
  });
});

describe("renderSettingsTable()", () => {
  it("renders one row per setting with its default, what it accepts and its doc", () => {
    const text = renderSettingsTable(listSettings(TABLE));
    const lines = text.trimEnd().split("\n");
    assert.equal(lines.length, 2 + 7);
    assert.equal(
      lines[2],
      "| `ALT_PORT`, then `PORT` | `8000` | an integer from 0 to 65535 | port |",
    );
    assert.equal(lines[6], "| `MODE` | `safe` | `fast`, `safe` | the mode |");
    assert.equal(
      lines[8],
      "| `KEY` |  | a key that starts with k | a key, required with MODE=fast |",
    );
  });

  it("escapes a pipe inside a cell", () => {
    const text = renderSettingsTable([textSetting("X", { default: "", accepts: "a|b", doc: "c" })]);
    assert.ok(text.includes("| a\\|b |"), text);
  });
});

describe("listSetting()", () => {
  const keys = listSetting("KEYS", {
    accepts: "keys",
    secret: true,
    item: (entry) => {
      if (entry.startsWith("sha256:")) throw new RangeError("sha256: needs 64 hex digits");
      return entry;
    },
    doc: "keys",
  });

  it("names a secret entry by its place and never quotes it", () => {
    assert.throws(
      () => keys.read("good-key, sha256:plain-secret-77", "KEYS", {}),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.match(error.message, /KEYS entry 2 must be keys: sha256: needs 64 hex digits/);
        assert.equal(error.message.includes("plain-secret-77"), false, error.message);
        return true;
      },
    );
  });

  it("quotes an entry that is not secret", () => {
    assertConfigError(() => readSettings(TABLE, { ITEMS: "1,x" }), "ITEMS", '("x")');
  });
});

describe("describeJsonError()", () => {
  const cases = [
    {
      name: "an unquoted value",
      text: '{"api_keys": [{"name": "a", "key": super-secret-key}]}',
      expected: "Unexpected character at line 1, column 36",
    },
    {
      name: "a letter where a value goes",
      text: "plain-secret-value",
      expected: "Unexpected character at line 1, column 1",
    },
    {
      name: "a trailing comma in a list, on its line",
      text: '{\n  "a": "x",\n  "b": [1,\n  ]\n}',
      expected: "Unexpected token ']' at line 4, column 3",
    },
    {
      name: "a trailing comma in an object",
      text: '{"key": "secret-in-object",}',
      expected: "Expected double-quoted property name at line 1, column 28",
    },
    {
      name: "a control character in a string",
      text: '{"key": "secret\u0001value"}',
      expected: "Bad control character in string literal at line 1, column 9",
    },
    {
      name: "a text that ends early",
      text: '{"key": "secret-cut-short',
      expected: "Unterminated string at line 1, column 9",
    },
  ] as const;
  for (const c of cases) {
    it(`says what and where, quoting nothing, for ${c.name}`, () => {
      let error: unknown;
      try {
        JSON.parse(c.text);
      } catch (caught) {
        error = caught;
      }
      assert.ok(error instanceof SyntaxError);
      assert.equal(describeJsonError(c.text, error), c.expected);
    });
  }

  it("is what parseConfigJson says, naming the variable and the file but no secret", () => {
    assert.throws(
      () =>
        parseConfigJson(
          '{"api_keys": [{"name": "a", "key": super-secret-key}]}',
          "keys.json",
          "API_KEYS_FILE",
        ),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.equal(error.variable, "API_KEYS_FILE");
        assert.equal(
          error.message,
          "Cannot start: keys.json is not valid JSON: Unexpected character at line 1, column 36",
        );
        return true;
      },
    );
  });
});

describe("jsonErrorPosition()", () => {
  const cases = [
    { text: "[1,]", expected: 3 },
    { text: '{"a": 1} x', expected: 9 },
    { text: '{"a": tru', expected: 6 },
    { text: "[1, 2", expected: 5 },
  ] as const;
  for (const c of cases) {
    it(`gives ${c.expected} for ${JSON.stringify(c.text)}`, () =>
      assert.equal(jsonErrorPosition(c.text), c.expected));
  }
});

describe("integerSetting()", () => {
  it("refuses a setting without a variable", () => {
    assert.throws(() => integerSetting([], { default: 1, min: 0, max: 2, doc: "" }), TypeError);
  });
});

describe("readConfigFile()", () => {
  it("reads a file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-config-"));
    writeFileSync(join(dir, "a.txt"), "hello");
    assert.equal(await readConfigFile(join(dir, "a.txt"), "A_FILE"), "hello");
  });

  it("names the variable and the file when it cannot be read", async () => {
    await assert.rejects(readConfigFile("/nonexistent/x.json", "A_FILE"), (error: unknown) => {
      assert.ok(error instanceof ConfigError);
      assert.equal(error.variable, "A_FILE");
      assert.match(error.message, /A_FILE names \/nonexistent\/x\.json.*ENOENT/);
      return true;
    });
  });
});

describe("pathSetting()", () => {
  const table = {
    clients: pathSetting("CLIENTS", { default: "data/clients.json", doc: "clients" }),
    keys: pathSetting("KEYS", { default: "data/keys.json", emptyMeansNone: true, doc: "keys" }),
  } as const;
  const cases = [
    {
      name: "gives the default, not given, when unset",
      env: {},
      expected: {
        clients: { path: "data/clients.json", given: false },
        keys: { path: "data/keys.json", given: false },
      },
    },
    {
      name: "gives a path set, trimmed, as given",
      env: { CLIENTS: " /etc/c.json ", KEYS: "k.json" },
      expected: {
        clients: { path: "/etc/c.json", given: true },
        keys: { path: "k.json", given: true },
      },
    },
    {
      name: "reads a value set empty as the default, or as none where that is allowed",
      env: { CLIENTS: "", KEYS: " " },
      expected: {
        clients: { path: "data/clients.json", given: false },
        keys: { path: "", given: true },
      },
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.deepEqual(readSettings(table, c.env), c.expected));

  it("documents the default path and what it accepts", () => {
    assert.equal(
      renderSettingsTable([table.clients]).split("\n")[2],
      "| `CLIENTS` | `data/clients.json` | a file | clients |",
    );
  });
});

describe("readConfigPath()", () => {
  const dir = mkdtempSync(join(tmpdir(), "tributary-config-"));
  writeFileSync(join(dir, "a.txt"), "hello");
  writeFileSync(join(dir, "file"), "");

  it("reads a file, given or default", async () => {
    assert.equal(
      await readConfigPath({ path: join(dir, "a.txt"), given: true }, "A_FILE"),
      "hello",
    );
    assert.equal(
      await readConfigPath({ path: join(dir, "a.txt"), given: false }, "A_FILE"),
      "hello",
    );
  });

  it("gives none for a default that is not there, nor its folder, and for a path set empty", async () => {
    assert.equal(
      await readConfigPath({ path: join(dir, "missing.json"), given: false }, "A_FILE"),
      undefined,
    );
    assert.equal(
      await readConfigPath({ path: join(dir, "file", "x.json"), given: false }, "A_FILE"),
      undefined,
    );
    assert.equal(await readConfigPath({ path: "", given: true }, "A_FILE"), undefined);
  });

  it("names the variable and the file when a path given is not there", async () => {
    await assert.rejects(
      readConfigPath({ path: join(dir, "missing.json"), given: true }, "A_FILE"),
      {
        name: "ConfigError",
        variable: "A_FILE",
        message: /^Cannot start: A_FILE names .*missing\.json, which cannot be read \(ENOENT\)$/,
      },
    );
  });

  it("names the variable when a default that is there cannot be read", async () => {
    await assert.rejects(readConfigPath({ path: dir, given: false }, "A_FILE"), {
      name: "ConfigError",
      variable: "A_FILE",
      message: /EISDIR/,
    });
  });
});

describe("redactUrl()", () => {
  const cases = [
    { input: "redis://app:s3cret@db:6379", expected: "redis://app:***@db:6379" },
    { input: "redis://127.0.0.1:6379", expected: "redis://127.0.0.1:6379" },
    { input: "not a url", expected: "not a url" },
  ] as const;
  for (const c of cases) {
    it(`gives ${c.expected} for ${c.input}`, () => assert.equal(redactUrl(c.input), c.expected));
  }
});

describe("ConfigError", () => {
  it("sets name, code and variable", () => {
    const error = new ConfigError("PORT", "Cannot start: PORT is bad");
    assert.ok(error instanceof Error);
    assert.equal(error.name, "ConfigError");
    assert.equal(error.code, "ERR_CONFIG_INVALID");
    assert.equal(error.variable, "PORT");
  });
});
