import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type QueryPair, readQueryOptions } from "../../lib/odata/mod.ts";

/** Decodes a query string the way the HTTP layer does (`+` and `%20` are spaces). */
function pairsOf(query: string): QueryPair[] {
  return [...new URLSearchParams(query)].map(([name, value]) => ({ name, value }));
}

function read(query: string, maxTop?: number) {
  return readQueryOptions(pairsOf(query), maxTop === undefined ? {} : { maxTop });
}

function refuses(query: string, target: string, maxTop?: number): void {
  assert.throws(() => read(query, maxTop), {
    name: "ODataError",
    code: "ERR_ODATA_QUERY_OPTION",
    target,
  });
}

describe("readQueryOptions()", () => {
  describe("names", () => {
    it("reads options with '$'", () => {
      const query = "$filter=Id eq 1&$top=10&$select=Id&$skiptoken=Id:5&$count=true&$format=csv";
      assert.deepEqual(read(query), {
        filter: "Id eq 1",
        top: 10,
        select: ["Id"],
        skipToken: "5",
        count: true,
        format: "csv",
      });
    });

    it("reads $filter=undefined as no filter, as the official JavaScript client sends it for an unfiltered call", () => {
      assert.deepEqual(read("$filter=undefined&$top=3"), { top: 3, count: false });
      assert.deepEqual(
        read("$filter=undefined eq 1"),
        { filter: "undefined eq 1", count: false },
        "only the bare word",
      );
    });

    it("reads options without '$'", () => {
      const query = "filter=Id eq 1&top=10&select=Id&skiptoken=Id:5&count=true&format=json";
      assert.deepEqual(read(query), {
        filter: "Id eq 1",
        top: 10,
        select: ["Id"],
        skipToken: "5",
        count: true,
        format: "json",
      });
    });

    it("reads '%24' as '$' and '+' as a space", () => {
      assert.deepEqual(read("%24filter=CharacteristicName+eq+'pH'&%24top=5"), {
        filter: "CharacteristicName eq 'pH'",
        top: 5,
        count: false,
      });
    });

    it("reads names in any case", () => {
      const query = "$FILTER=A eq 1&$Top=3&SELECT=Id&$SkipToken=Id:9&$COUNT=false&$Format=csv";
      assert.deepEqual(read(query), {
        filter: "A eq 1",
        top: 3,
        select: ["Id"],
        skipToken: "9",
        count: false,
        format: "csv",
      });
    });

    it("gives defaults when there are no options", () => {
      assert.deepEqual(read(""), { count: false });
    });

    it("ignores custom options without '$'", () => {
      assert.deepEqual(read("foo=bar&api_key=x&$top=2"), { top: 2, count: false });
    });

    it("keeps the filter text as given", () => {
      const filter = "DOI in ('10.25976/a', '10.25976/b') and " +
        "CharacteristicName eq '2,2''-Dichlorobiphenyl'";
      assert.equal(readQueryOptions([{ name: "$filter", value: filter }]).filter, filter);
    });
  });

  describe("empty values", () => {
    const cases = [
      "$skip=",
      "$orderby=",
      "$skiptoken=",
      "$count=",
      "$top=",
      "$filter=",
      "$select=",
      "$format=",
      "$foo=",
      "$expand=",
    ];
    for (const query of cases) {
      it(
        `ignores ${query}`,
        () => assert.deepEqual(read(`${query}&$top=3`), { top: 3, count: false }),
      );
    }

    it("ignores an empty option repeated", () => {
      assert.deepEqual(read("$skip=&$skip=&$count=&$count=true"), { count: true });
    });
  });

  describe("errors", () => {
    it("refuses a repeated option", () => refuses("$top=1&$top=2", "$top"));
    it(
      "refuses an option repeated with and without '$'",
      () => refuses("$filter=A eq 1&filter=A eq 2", "$filter"),
    );
    it(
      "refuses an option repeated in another case",
      () => refuses("$select=Id&$SELECT=Id", "$select"),
    );
    it("refuses an unknown '$' option, naming it", () => refuses("$foo=1", "$foo"));
    it("names an unknown option as written", () => refuses("$Foo=1", "$Foo"));
    it("refuses $expand", () => refuses("$expand=x", "$expand"));
    it("refuses $search", () => refuses("$search=lake", "$search"));
    it("refuses $compute without '$'", () => refuses("compute=Id as X", "$compute"));
  });

  describe("$apply", () => {
    it("reads $apply as text, with or without '$'", () => {
      assert.equal(read("$apply=groupby((Id))").apply, "groupby((Id))");
      assert.equal(read("apply=aggregate($count as N)").apply, "aggregate($count as N)");
      assert.equal(read("$top=1").apply, undefined);
    });
  });

  describe("$skip", () => {
    it("reads 0 to 1,000,000 rows to pass over", () => {
      assert.equal(read("$skip=0").skip, 0);
      assert.equal(read("$skip=25&$top=5").skip, 25);
      assert.equal(read("skip=1000000").skip, 1_000_000);
    });
    for (const bad of ["-1", "1.5", "x", "1000001"]) {
      it(`refuses $skip=${bad}, saying how to page deeper`, () => {
        refuses(`$skip=${bad}`, "$skip");
        assert.throws(() => read(`$skip=${bad}`), { message: /@odata\.nextLink/ });
      });
    }
  });

  describe("$top", () => {
    const accepted = [
      { input: "1", expected: 1 },
      { input: "10000", expected: 10_000 },
      { input: "1000", expected: 1000 },
      { input: "007", expected: 7 },
      { input: " 5 ", expected: 5 },
    ] as const;
    for (const c of accepted) {
      it(`accepts $top=${JSON.stringify(c.input)}`, () => {
        assert.equal(readQueryOptions([{ name: "$top", value: c.input }]).top, c.expected);
      });
    }

    const refused = ["0", "10001", "-1", "1.5", "abc", "1e3", "+5", "0x10", "99999999999999999999"];
    for (const input of refused) {
      it(`refuses $top=${input}`, () => refuses(`$top=${encodeURIComponent(input)}`, "$top"));
    }

    it("follows a custom maxTop", () => {
      assert.equal(read("$top=50", 50).top, 50);
      refuses("$top=51", "$top", 50);
      assert.equal(read("$top=20000", 100_000).top, 20_000);
    });
  });

  describe("$skiptoken", () => {
    it("reads Id:<number>", () => assert.equal(read("$skiptoken=Id:123").skipToken, "123"));

    it("reads Id:<uuid>", () => {
      assert.equal(
        read("$skiptoken=Id:000000ab-000a-00a0-0aba-0ab00abc0a0a").skipToken,
        "000000ab-000a-00a0-0aba-0ab00abc0a0a",
      );
    });

    it("trims spaces around the token and the id", () => {
      assert.equal(read("$skiptoken= Id: 99 ").skipToken, "99");
    });

    for (const input of ["123", "Id:", "Id: ", "id:5", "ID:5", "Id=5", "Name:5", ":5"]) {
      it(
        `refuses $skiptoken=${input}`,
        () => refuses(`$skiptoken=${encodeURIComponent(input)}`, "$skiptoken"),
      );
    }
  });

  describe("$count", () => {
    const cases = [
      { input: "true", expected: true },
      { input: "false", expected: false },
      { input: "TRUE", expected: true },
      { input: "False", expected: false },
      { input: " true ", expected: true },
    ] as const;
    for (const c of cases) {
      it(`reads $count=${JSON.stringify(c.input)} as ${c.expected}`, () => {
        assert.equal(readQueryOptions([{ name: "$count", value: c.input }]).count, c.expected);
      });
    }

    for (const input of ["1", "yes", "t", "truee"]) {
      it(`refuses $count=${input}`, () => refuses(`$count=${input}`, "$count"));
    }
  });

  describe("$select", () => {
    it("trims names, as the R client sends 'Id, DOI'", () => {
      assert.deepEqual(read("$select=Id,%20DOI").select, ["Id", "DOI"]);
    });

    it("trims names given with '+' for spaces", () => {
      assert.deepEqual(read("$select=+DatasetName+,+Abstract").select, ["DatasetName", "Abstract"]);
    });

    it("keeps the order given", () => {
      assert.deepEqual(
        read("$select=Longitude,Latitude,Id").select,
        ["Longitude", "Latitude", "Id"],
      );
    });

    it("removes duplicates", () => {
      assert.deepEqual(read("$select=Id,DOI,Id, DOI").select, ["Id", "DOI"]);
    });

    it("keeps names that differ only in case", () => {
      assert.deepEqual(read("$select=Id,ID").select, ["Id", "ID"]);
    });

    for (const input of ["Id,,DOI", "Id,", ",Id", " , "]) {
      it(`refuses $select=${JSON.stringify(input)} with an empty entry`, () => {
        refuses(`$select=${encodeURIComponent(input)}`, "$select");
      });
    }
  });

  describe("$format", () => {
    const cases = [
      { input: "json", expected: "json" },
      { input: "JSON", expected: "json" },
      { input: "application/json", expected: "json" },
      { input: "application/json;odata.metadata=minimal", expected: "json" },
      { input: "application/json; odata.metadata=none", expected: "json" },
      { input: "csv", expected: "csv" },
      { input: "text/csv", expected: "csv" },
      { input: "text/csv;charset=utf-8", expected: "csv" },
    ] as const;
    for (const c of cases) {
      it(`reads $format=${c.input} as ${c.expected}`, () => {
        assert.equal(readQueryOptions([{ name: "$format", value: c.input }]).format, c.expected);
      });
    }

    for (const input of ["xml", "atom", "application/xml", "text/plain", "jsonx"]) {
      it(
        `refuses $format=${input}`,
        () => refuses(`$format=${encodeURIComponent(input)}`, "$format"),
      );
    }
  });

  describe("$orderby", () => {
    for (const input of ["Id", "Id asc", " Id ", "Id  asc"]) {
      it(`accepts $orderby=${JSON.stringify(input)}, the order results come in anyway`, () => {
        assert.deepEqual(readQueryOptions([{ name: "$orderby", value: input }]), { count: false });
      });
    }

    const keys = [
      { input: "Id desc", expected: [{ name: "Id", descending: true }] },
      { input: "DOI", expected: [{ name: "DOI", descending: false }] },
      {
        input: "ResultValue DESC, ActivityStartDate",
        expected: [{ name: "ResultValue", descending: true }, {
          name: "ActivityStartDate",
          descending: false,
        }],
      },
      { input: "Id ASC", expected: undefined },
    ];
    for (const { input, expected } of keys) {
      it(`reads $orderby=${JSON.stringify(input)}`, () => {
        assert.deepEqual(readQueryOptions([{ name: "$orderby", value: input }]).orderBy, expected);
      });
    }

    for (const input of ["Id sideways", "DOI,", "Id,Id", "1st", "Name asc desc"]) {
      it(`refuses $orderby=${JSON.stringify(input)}`, () => {
        assert.throws(() => readQueryOptions([{ name: "$orderby", value: input }]), {
          code: "ERR_ODATA_QUERY_OPTION",
          target: "$orderby",
        });
      });
    }
  });
});
