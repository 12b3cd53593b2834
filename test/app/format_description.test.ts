import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { type AppDescription, formatDescription } from "../../lib/app/mod.ts";
import { DEMO_CREDENTIALS, isDemoCredential } from "../../lib/app/is_demo_credential.ts";
import { readClientsFile } from "../../lib/auth/mod.ts";
import { readApiKeysFile, type ServiceCredential } from "../../lib/http/mod.ts";
import { readTenantsFile, TenantRegistry } from "../../lib/relay/mod.ts";

const ROOT = join(import.meta.dirname, "..", "..");

const demoKey: ServiceCredential = {
  label: 'API key "demo"',
  value: "tributary-demo-key",
  setting: "API_KEYS_FILE",
  file: "data/api_keys.json",
  example: "curl -H 'x-api-key: {value}' 'http://127.0.0.1:8000/v1/odata/v4/Locations?$top=2'",
};
const ownSecret: ServiceCredential = {
  label: 'OAuth client "backend" secret',
  value: "own-client-secret-4f1e",
  setting: "CLIENTS_FILE",
  file: "/etc/tributary/clients.json",
};

function described(credentials: readonly ServiceCredential[]): AppDescription {
  return {
    services: ["water"],
    notes: ["8 datasets loaded"],
    endpoints: [{ label: "Water data", url: "http://127.0.0.1:8000/v1/odata/v4" }],
    credentials,
  };
}

describe("formatDescription()", () => {
  it("gives the notes, then the entry points, then each credential", () => {
    assert.deepEqual(formatDescription(described([ownSecret])), [
      "8 datasets loaded",
      "Water data: http://127.0.0.1:8000/v1/odata/v4",
      'OAuth client "backend" secret: see /etc/tributary/clients.json',
    ]);
  });

  it("says where the demo key is kept, and not its value, when the lines do not go to a terminal", () => {
    const lines = formatDescription(described([demoKey]), { terminal: false });
    assert.deepEqual(lines.slice(2), [
      'API key "demo": see data/api_keys.json',
      "Try: curl -H 'x-api-key: <from data/api_keys.json>' 'http://127.0.0.1:8000/v1/odata/v4/Locations?$top=2'",
    ]);
    assert.equal(lines.join("\n").includes("tributary-demo-key"), false);
  });

  it("shows nothing by default: a host that does not say it prints to a terminal is taken not to", () => {
    assert.equal(
      formatDescription(described([demoKey])).join("\n").includes("tributary-demo-key"),
      false,
    );
  });

  it("shows the demo key and a first request with it on a terminal", () => {
    assert.deepEqual(formatDescription(described([demoKey]), { terminal: true }).slice(2), [
      'API key "demo": tributary-demo-key (the demo data\'s, from data/api_keys.json)',
      "Try: curl -H 'x-api-key: tributary-demo-key' 'http://127.0.0.1:8000/v1/odata/v4/Locations?$top=2'",
    ]);
  });

  it("never shows a credential that is not the demo data's, even on a terminal", () => {
    const lines = formatDescription(
      described([ownSecret, { ...demoKey, value: "changed-key-0c9d" }]),
      { terminal: true },
    );
    assert.deepEqual(lines.slice(2, 4), [
      'OAuth client "backend" secret: see /etc/tributary/clients.json',
      'API key "demo": see data/api_keys.json',
    ]);
    assert.equal(lines.join("\n").includes("own-client-secret-4f1e"), false);
    assert.equal(lines.join("\n").includes("changed-key-0c9d"), false);
  });

  it("asks isPublic which values it may show on a terminal", () => {
    const lines = formatDescription(described([demoKey, ownSecret]), {
      terminal: true,
      isPublic: (credential) => credential.setting === "CLIENTS_FILE",
    });
    assert.equal(lines.join("\n").includes("tributary-demo-key"), false);
    assert.ok(
      lines.includes(
        'OAuth client "backend" secret: own-client-secret-4f1e (the demo data\'s, from /etc/tributary/clients.json)',
      ),
    );
  });
});

describe("isDemoCredential()", () => {
  const cases = [
    { name: "the demo key in the default file", credential: demoKey, expected: true },
    {
      name: "the demo key in the default file, named with ./",
      credential: { ...demoKey, file: "./data/api_keys.json" },
      expected: true,
    },
    {
      name: "a demo tenant key in the default tenants file",
      credential: {
        ...demoKey,
        setting: "TENANTS_FILE",
        file: "data/tenants.json",
        value: "demo-globex-key",
      },
      expected: true,
    },
    {
      name: "the demo key copied into another file",
      credential: { ...demoKey, file: "var/api_keys.json" },
      expected: false,
    },
    {
      name: "another key in the default file",
      credential: { ...demoKey, value: "changed-key-0c9d" },
      expected: false,
    },
    {
      name: "a demo value of another file",
      credential: { ...demoKey, value: "demo-backend-secret" },
      expected: false,
    },
    {
      name: "a setting without demo data",
      credential: { ...demoKey, setting: "OTHER_FILE" },
      expected: false,
    },
  ] as const;
  for (const c of cases) {
    it(`says ${c.expected} for ${c.name}`, () =>
      assert.equal(isDemoCredential(c.credential), c.expected));
  }
});

describe("DEMO_CREDENTIALS", () => {
  const plainOf = (setting: string): string[] => {
    const entry = DEMO_CREDENTIALS.find((candidate) => candidate.setting === setting);
    assert.ok(entry !== undefined, setting);
    const text = readFileSync(join(ROOT, entry.file), "utf8");
    switch (setting) {
      case "API_KEYS_FILE":
        return [...readApiKeysFile(text, entry.file).plain.values()];
      case "CLIENTS_FILE":
        return [...readClientsFile(text, entry.file).plain.values()];
      default:
        return [
          ...readTenantsFile(
            new TenantRegistry({
              now: () => 0,
              random: (size) => new Uint8Array(size),
            }),
            text,
            entry.file,
          ).values(),
        ].flat();
    }
  };

  it("names the three demo files", () => {
    assert.deepEqual(DEMO_CREDENTIALS.map((entry) => [entry.setting, entry.file]), [
      ["API_KEYS_FILE", "data/api_keys.json"],
      ["CLIENTS_FILE", "data/clients.json"],
      ["TENANTS_FILE", "data/tenants.json"],
    ]);
  });

  for (const entry of DEMO_CREDENTIALS) {
    it(`holds exactly the plain secrets of ${entry.file}`, () => {
      assert.deepEqual([...entry.values].sort(), plainOf(entry.setting).sort());
    });
  }
});
