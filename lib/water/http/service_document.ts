import type { FilterFieldType } from "../../odata/mod.ts";
import { COLLECTIONS } from "../fields.ts";

const EDM_TYPES: Readonly<Record<FilterFieldType, string>> = {
  string: "Edm.String",
  number: "Edm.Double",
  integer: "Edm.Int64",
  date: "Edm.Date",
  datetime: "Edm.DateTimeOffset",
  guid: "Edm.Guid",
  boolean: "Edm.Boolean",
};

/**
 * Facets a property of the type declares. CSDL's default precision of a
 * date-time is 0 (whole seconds), while timestamps are written to the
 * millisecond (`2020-08-06T15:16:56.000Z`, as DataStream writes them).
 */
const EDM_FACETS: Readonly<Partial<Record<FilterFieldType, string>>> = {
  datetime: ` Precision="3"`,
};

/** The namespace of the entity types in `$metadata`. */
export const SCHEMA_NAMESPACE = "DataStream";

/**
 * Builds the OData service document: the four entity sets.
 * @param base absolute URL of the service root, e.g. `http://localhost:8000/v1/odata/v4`
 * @returns the JSON document
 */
export function serviceDocument(base: string): unknown {
  return {
    "@odata.context": `${base}/$metadata`,
    value: [...COLLECTIONS.keys()].map((name) => ({ name, kind: "EntitySet", url: name })),
  };
}

/**
 * Builds the CSDL XML `$metadata` document describing the four entity sets,
 * their selectable properties and types. Times and time zones are strings,
 * as the data keeps them as written (`HH:MM` or `HH:MM:SS`). The document
 * validates against the OASIS CSDL XML schemas (`edmx.xsd`, `edm.xsd`).
 * @returns the XML text
 */
export function metadataDocument(): string {
  const types: string[] = [];
  const sets: string[] = [];
  for (const [name, collection] of COLLECTIONS) {
    const properties = collection.select.map((field) => {
      const edm = EDM_TYPES[field.source.type];
      const type = field.source.multiValued === true ? `Collection(${edm})` : edm;
      const key = field.name === "Id" ? ` Nullable="false"` : "";
      const facets = EDM_FACETS[field.source.type] ?? "";
      return `        <Property Name="${field.name}" Type="${type}"${key}${facets}/>`;
    });
    types.push(
      `      <EntityType Name="${name}">\n        <Key><PropertyRef Name="Id"/></Key>\n` +
        `${properties.join("\n")}\n      </EntityType>`,
    );
    sets.push(`        <EntitySet Name="${name}" EntityType="${SCHEMA_NAMESPACE}.${name}"/>`);
  }
  return `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:DataServices>
    <Schema Namespace="${SCHEMA_NAMESPACE}" xmlns="http://docs.oasis-open.org/odata/ns/edm">
${types.join("\n")}
      <EntityContainer Name="Container">
${sets.join("\n")}
      </EntityContainer>
    </Schema>
  </edmx:DataServices>
</edmx:Edmx>
`;
}
