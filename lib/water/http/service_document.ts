import type { FilterFieldType } from "../../odata/mod.ts";
import { type CollectionField, COLLECTIONS } from "../fields.ts";

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
 * their selectable properties and types, and the `$apply` of the sets
 * that take it, `/Locations`, `/Observations` and `/Records`
 * (`Org.OData.Aggregation.V1.ApplySupported`: the transformations, the
 * groupable properties and the aggregatable numbers; `/Metadata` has none,
 * as it takes no `$apply`). Times and time zones are strings,
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
    const set = `        <EntitySet Name="${name}" EntityType="${SCHEMA_NAMESPACE}.${name}"`;
    sets.push(
      collection.level !== "dataset"
        ? `${set}>\n${applySupported(collection.select)}\n        </EntitySet>`
        : `${set}/>`,
    );
  }
  return `<?xml version="1.0" encoding="utf-8"?>
<edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx">
  <edmx:Reference Uri="https://oasis-tcs.github.io/odata-vocabularies/vocabularies/Org.OData.Aggregation.V1.xml">
    <edmx:Include Namespace="Org.OData.Aggregation.V1" Alias="Aggregation"/>
  </edmx:Reference>
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

/** The transformations `$apply` answers, as `ApplySupported` lists them. */
const TRANSFORMATIONS = [
  "identity",
  "filter",
  "compute",
  "groupby",
  "aggregate",
  "orderby",
  "top",
  "skip",
  "topcount",
  "bottomcount",
] as const;

/** The `Aggregation.ApplySupported` annotation of a set: its single-valued properties group, its numbers aggregate. */
function applySupported(fields: readonly CollectionField[]): string {
  const pad = "              ";
  const single = fields.filter((field) => field.source.multiValued !== true);
  const numeric = single.filter((field) =>
    field.source.type === "number" || field.source.type === "integer"
  );
  const strings = (values: readonly string[], tag: string): string =>
    values.map((value) => `${pad}    <${tag}>${value}</${tag}>`).join("\n");
  const methods = ["sum", "min", "max", "average", "countdistinct"];
  const aggregatable = numeric.map((field) =>
    `${pad}    <Record>\n${pad}      <PropertyValue Property="Property" PropertyPath="${field.name}"/>\n` +
    `${pad}      <PropertyValue Property="SupportedAggregationMethods">\n${pad}        <Collection>` +
    methods.map((method) => `<String>${method}</String>`).join("") +
    `</Collection>\n${pad}      </PropertyValue>\n${pad}    </Record>`
  );
  return [
    `          <Annotation Term="Aggregation.ApplySupported">`,
    `            <Record>`,
    `${pad}<PropertyValue Property="Transformations">`,
    `${pad}  <Collection>\n${strings(TRANSFORMATIONS, "String")}\n${pad}  </Collection>`,
    `${pad}</PropertyValue>`,
    `${pad}<PropertyValue Property="Rollup" EnumMember="Aggregation.RollupType/None"/>`,
    `${pad}<PropertyValue Property="GroupableProperties">`,
    `${pad}  <Collection>\n${
      strings(single.map((field) => field.name), "PropertyPath")
    }\n${pad}  </Collection>`,
    `${pad}</PropertyValue>`,
    `${pad}<PropertyValue Property="AggregatableProperties">`,
    `${pad}  <Collection>\n${aggregatable.join("\n")}\n${pad}  </Collection>`,
    `${pad}</PropertyValue>`,
    `            </Record>`,
    `          </Annotation>`,
  ].join("\n");
}
