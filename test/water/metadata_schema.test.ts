// $metadata checked against the OASIS OData CSDL XML schemas (edmx.xsd and
// edm.xsd as the OData TC publishes them in its npm package odata-csdl), with
// libxml2's XML Schema validator (xmllint compiled to WebAssembly, so it needs
// no system package), then against the CSDL rules the schemas leave to the
// prose (keys, type references) through the TC's own CSDL XML-to-JSON
// converter, and against the rows the service actually serves.
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { before, describe, it } from "node:test";
import { validateXML, type XMLValidationResult } from "xmllint-wasm";
import type { Handler } from "../../lib/http/mod.ts";
import { call, demoStore, waterHandler } from "../_helpers/water.ts";

const BASE = "/v1/odata/v4";
const require = createRequire(import.meta.url);

/** A CSDL JSON document as odata-csdl's xml2json returns it (only what the checks read). */
type CsdlJson = Readonly<Record<string, unknown>>;
type Xml2Json = (xml: string, options: { strict: boolean; messages: unknown[] }) => CsdlJson;
const { xml2json } = require("odata-csdl") as { xml2json: Xml2Json };

let handler: Handler;
let metadata: string;
let schemas: { edmx: string; edm: string };

before(async () => {
  handler = waterHandler((await demoStore()).store);
  const result = await call(handler, `${BASE}/$metadata`);
  assert.equal(result.status, 200);
  metadata = result.text;
  const [edmx, edm] = await Promise.all(
    ["edmx.xsd", "edm.xsd"].map((name) =>
      readFile(require.resolve(`odata-csdl/schemas/${name}`), "utf8")
    ),
  );
  schemas = { edmx: edmx!, edm: edm! };
});

/** Validates a CSDL XML document against edmx.xsd, which imports edm.xsd. */
function validate(xml: string): Promise<XMLValidationResult> {
  return validateXML({
    xml: [{ fileName: "metadata.xml", contents: xml }],
    schema: [{ fileName: "edmx.xsd", contents: schemas.edmx }],
    preload: [{ fileName: "edm.xsd", contents: schemas.edm }],
  });
}

describe("$metadata: the OASIS CSDL XML schemas", () => {
  it("validates against edmx.xsd and edm.xsd", async () => {
    const result = await validate(metadata);
    assert.deepEqual(result.errors.map((error) => error.rawMessage), []);
    assert.equal(result.valid, true);
  });

  // The same validator refuses documents broken the ways a CSDL writer can
  // break them, so a pass above is the schema's verdict, not a silent no-op.
  const broken = [
    {
      name: "an EDMX version the schema does not list",
      from: `Version="4.0"`,
      to: `Version="3.0"`,
      error: /Version/,
    },
    {
      name: "a property without its Type",
      from: `Type="Edm.Double"`,
      to: `Typ="Edm.Double"`,
      error: /Typ/,
    },
    {
      name: "a namespace that is not a simple identifier",
      from: `Namespace="DataStream"`,
      to: `Namespace="Data Stream"`,
      error: /Namespace/,
    },
    {
      name: "a second Key",
      from: `<Key><PropertyRef Name="Id"/></Key>`,
      to: `<Key><PropertyRef Name="Id"/></Key><Key><PropertyRef Name="Id"/></Key>`,
      error: /Key/,
    },
    {
      name: "an entity set outside the container",
      from: `<Key>`,
      to: `<EntitySet Name="X" EntityType="DataStream.X"/><Key>`,
      error: /EntitySet/,
    },
    {
      name: "edm elements in another namespace",
      from: `ns/edm"`,
      to: `ns/edm/wrong"`,
      error: /Schema/,
    },
  ] as const;
  for (const c of broken) {
    it(`is refused with ${c.name}`, async () => {
      const xml = metadata.replace(c.from, c.to);
      assert.notEqual(xml, metadata);
      const result = await validate(xml);
      assert.equal(result.valid, false);
      assert.match(result.errors.map((error) => error.message).join("\n"), c.error);
    });
  }
});

/** The primitive types of OData 4.0 (CSDL XML §4.4). */
const PRIMITIVE_TYPES = new Set([
  "Edm.Binary",
  "Edm.Boolean",
  "Edm.Byte",
  "Edm.Date",
  "Edm.DateTimeOffset",
  "Edm.Decimal",
  "Edm.Double",
  "Edm.Duration",
  "Edm.Guid",
  "Edm.Int16",
  "Edm.Int32",
  "Edm.Int64",
  "Edm.SByte",
  "Edm.Single",
  "Edm.Stream",
  "Edm.String",
  "Edm.TimeOfDay",
]);
/** The types a key property may have (CSDL XML §8.2). */
const KEY_TYPES = new Set([
  "Edm.Boolean",
  "Edm.Byte",
  "Edm.Date",
  "Edm.DateTimeOffset",
  "Edm.Decimal",
  "Edm.Duration",
  "Edm.Guid",
  "Edm.Int16",
  "Edm.Int32",
  "Edm.Int64",
  "Edm.SByte",
  "Edm.String",
  "Edm.TimeOfDay",
]);

interface Property {
  readonly name: string;
  readonly type: string;
  readonly collection: boolean;
  readonly nullable: boolean;
  readonly precision: number | undefined;
}

interface EntityType {
  readonly key: readonly string[];
  readonly properties: ReadonlyMap<string, Property>;
}

function record(value: unknown): Readonly<Record<string, unknown>> {
  assert.ok(typeof value === "object" && value !== null && !Array.isArray(value));
  return value as Record<string, unknown>;
}

/** Reads the CSDL JSON's entity types and entity sets (JSON CSDL §4-§13 defaults applied). */
function readModel(csdl: CsdlJson): { types: Map<string, EntityType>; sets: Map<string, string> } {
  const types = new Map<string, EntityType>();
  const sets = new Map<string, string>();
  for (const [namespace, value] of Object.entries(csdl)) {
    if (namespace.startsWith("$")) continue;
    for (const [name, element] of Object.entries(record(value))) {
      if (name.startsWith("$")) continue;
      const members = record(element);
      if (members["$Kind"] === "EntityType") {
        const properties = new Map<string, Property>();
        for (const [member, definition] of Object.entries(members)) {
          if (member.startsWith("$")) continue;
          const d = record(definition);
          assert.ok(
            d["$Kind"] === undefined || d["$Kind"] === "Property",
            `${name}.${member} is a ${String(d["$Kind"])}`,
          );
          properties.set(member, {
            name: member,
            type: typeof d["$Type"] === "string" ? d["$Type"] : "Edm.String",
            collection: d["$Collection"] === true,
            nullable: d["$Nullable"] === true,
            precision: typeof d["$Precision"] === "number" ? d["$Precision"] : undefined,
          });
        }
        const key = members["$Key"];
        assert.ok(
          Array.isArray(key) && key.every((k) => typeof k === "string"),
          `${name} has no simple key`,
        );
        types.set(`${namespace}.${name}`, { key, properties });
      } else if (members["$Kind"] === "EntityContainer") {
        for (const [set, definition] of Object.entries(members)) {
          if (set.startsWith("$")) continue;
          const d = record(definition);
          assert.equal(d["$Collection"], true, `${set} is not an entity set`);
          assert.equal(typeof d["$Type"], "string");
          sets.set(set, d["$Type"] as string);
        }
      }
    }
  }
  return { types, sets };
}

describe("$metadata: the CSDL rules beyond the schemas", () => {
  let model: ReturnType<typeof readModel>;
  before(() => {
    const messages: unknown[] = [];
    const csdl = xml2json(metadata, { strict: true, messages });
    assert.deepEqual(messages, []);
    assert.equal(csdl["$Version"], "4.0");
    model = readModel(csdl);
  });

  it("declares one entity set per collection, each of an entity type the document defines", () => {
    assert.deepEqual([...model.sets.keys()], ["Metadata", "Locations", "Observations", "Records"]);
    for (const [set, type] of model.sets) assert.ok(model.types.has(type), `${set}: ${type}`);
  });

  it("keys each entity type on a non-nullable primitive property it declares", () => {
    for (const [name, type] of model.types) {
      assert.ok(type.key.length > 0, name);
      for (const ref of type.key) {
        const property = type.properties.get(ref);
        assert.ok(property !== undefined, `${name}: key ${ref} names no property`);
        assert.ok(
          KEY_TYPES.has(property.type) && !property.collection,
          `${name}.${ref}: ${property.type}`,
        );
        assert.equal(property.nullable, false, `${name}.${ref} is nullable`);
      }
    }
  });

  it("types every property with an OData 4.0 primitive type", () => {
    for (const [name, type] of model.types) {
      for (const property of type.properties.values()) {
        assert.ok(PRIMITIVE_TYPES.has(property.type), `${name}.${property.name}: ${property.type}`);
      }
    }
  });
});

/** Whether a JSON value is written as the OData JSON format writes its declared type. */
function fits(value: unknown, property: Property): boolean {
  switch (property.type) {
    case "Edm.String":
      return typeof value === "string";
    case "Edm.Double":
      return typeof value === "number" && Number.isFinite(value);
    case "Edm.Int64":
      return Number.isSafeInteger(value);
    case "Edm.Guid":
      return typeof value === "string" &&
        /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(value);
    case "Edm.Date":
      return typeof value === "string" && /^\d{4}-\d{2}-\d{2}$/.test(value) &&
        !Number.isNaN(Date.parse(value));
    case "Edm.DateTimeOffset": {
      const match = typeof value === "string"
        ? /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.(\d+))?)?(?:Z|[+-]\d{2}:\d{2})$/.exec(value)
        : null;
      return match !== null && (match[1] ?? "").length <= (property.precision ?? 0);
    }
    default:
      return false;
  }
}

describe("$metadata: the rows the service serves", () => {
  let model: ReturnType<typeof readModel>;
  before(() => {
    model = readModel(xml2json(metadata, { strict: true, messages: [] }));
  });

  for (const collection of ["Metadata", "Locations", "Observations", "Records"]) {
    it(`writes every ${collection} row with exactly the declared properties, each of its declared type`, async () => {
      const type = model.types.get(model.sets.get(collection)!)!;
      const result = await call(handler, `${BASE}/${collection}?$top=2000`, {
        headers: { "x-api-key": "test-key" },
      });
      assert.equal(result.status, 200);
      const rows = (result.json() as { value: Record<string, unknown>[] }).value;
      assert.ok(rows.length > 0);
      const declared = [...type.properties.keys()];
      for (const row of rows) {
        assert.deepEqual(Object.keys(row).filter((name) => !name.startsWith("@")), declared);
        for (const property of type.properties.values()) {
          const value = row[property.name];
          if (value === null) {
            assert.ok(
              property.nullable && !property.collection,
              `${collection}.${property.name} is null`,
            );
            continue;
          }
          const items = property.collection ? value : [value];
          assert.ok(
            Array.isArray(items),
            `${collection}.${property.name}: ${JSON.stringify(value)}`,
          );
          for (const item of items) {
            assert.ok(
              fits(item, property),
              `${collection}.${property.name} (${property.type}): ${JSON.stringify(item)}`,
            );
          }
        }
      }
    });
  }
});
