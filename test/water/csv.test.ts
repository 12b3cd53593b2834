import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { CsvScanner, formatCsvRow, parseCsv } from "../../lib/water/mod.ts";
import { formatCsvField } from "../../lib/water/render/format_csv.ts";
import { createPrng } from "../_helpers/prng.ts";

describe("parseCsv()", () => {
  const cases = [
    {
      name: "splits plain fields",
      input: "a,b,c\r\n1,2,3\r\n",
      expected: [["a", "b", "c"], ["1", "2", "3"]],
    },
    { name: "reads LF line ends", input: "a,b\n1,2\n", expected: [["a", "b"], ["1", "2"]] },
    { name: "reads CR line ends", input: "a,b\r1,2\r", expected: [["a", "b"], ["1", "2"]] },
    {
      name: "reads a last record without a line end",
      input: "a,b\r\n1,2",
      expected: [["a", "b"], ["1", "2"]],
    },
    {
      name: "keeps commas inside quotes",
      input: '"Temperature, water",1\r\n',
      expected: [["Temperature, water", "1"]],
    },
    {
      name: "unescapes doubled quotes",
      input: '"say ""hi""",x\r\n',
      expected: [['say "hi"', "x"]],
    },
    {
      name: "keeps line breaks inside quotes",
      input: '"line 1\r\nline 2",x\r\n',
      expected: [["line 1\r\nline 2", "x"]],
    },
    { name: "reads empty fields", input: ",,\r\n", expected: [["", "", ""]] },
    { name: "reads an empty quoted field", input: '"",a\r\n', expected: [["", "a"]] },
    { name: "skips a byte order mark", input: "\uFEFFa,b\r\n", expected: [["a", "b"]] },
    { name: "skips blank lines", input: "a\r\n\r\nb\r\n", expected: [["a"], ["b"]] },
    {
      name: "keeps apostrophes and parentheses",
      input: "2,2',4,4'-X,\"Dissolved oxygen (DO)\"\r\n",
      expected: [["2", "2'", "4", "4'-X", "Dissolved oxygen (DO)"]],
    },
    { name: "decodes UTF-8", input: "Rivière,é\r\n", expected: [["Rivière", "é"]] },
  ] as const;
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(parseCsv(c.input), c.expected));
  }

  const errors = [
    { name: "refuses a quote that is never closed", input: 'a,"b\r\n', line: 1, column: 2 },
    { name: "refuses a quote inside an unquoted field", input: 'a,b"c\r\n', line: 1, column: 2 },
    { name: "refuses text after a closing quote", input: 'a\r\n"b"c,d\r\n', line: 2, column: 1 },
  ] as const;
  for (const c of errors) {
    it(c.name, () => {
      assert.throws(() => parseCsv(c.input), {
        name: "CsvSyntaxError",
        line: c.line,
        column: c.column,
      });
    });
  }
});

describe("formatCsvRow()", () => {
  it("quotes fields with commas, quotes and line breaks", () => {
    assert.equal(
      formatCsvRow(["a,b", 'say "x"', "1\n2", "plain"]),
      '"a,b","say ""x""","1\n2",plain\r\n',
    );
  });

  it("writes null and undefined as empty fields and numbers as text", () => {
    assert.equal(formatCsvRow([null, undefined, 7.25, -0.5, true]), ",,7.25,-0.5,true\r\n");
  });

  it("round-trips random records through parseCsv", () => {
    const prng = createPrng(20261122);
    const alphabet = ["a", "Z", "0", ",", '"', "\r\n", "\n", "'", " ", "é", "(", ")", "🌊"];
    for (let round = 0; round < 500; round++) {
      const rows: string[][] = [];
      const width = 1 + prng.int(6);
      for (let r = 0; r < 1 + prng.int(5); r++) {
        const row: string[] = [];
        for (let f = 0; f < width; f++) {
          let text = "";
          for (let k = prng.int(8); k > 0; k--) text += prng.pick(alphabet);
          row.push(text);
        }
        if (row.length === 1 && row[0] === "") row[0] = "x";
        rows.push(row);
      }
      const text = rows.map((row) => formatCsvRow(row)).join("");
      assert.deepEqual(parseCsv(text), rows, `seed 20261122 round ${round}`);
    }
  });
});

describe("formatCsvField()", () => {
  it("leaves a plain field alone", () => assert.equal(formatCsvField("pH"), "pH"));
  it("quotes a carriage return", () => assert.equal(formatCsvField("a\rb"), '"a\rb"'));
});

describe("CsvScanner", () => {
  const text = 'a,"b,""c""\r\nd",e\r\nf,g\r\n';
  const bytes = new TextEncoder().encode(text);

  it("finds where each record ends", () => {
    const scanner = new CsvScanner();
    const ends: number[] = [];
    for (let pos = 0; pos < bytes.length;) {
      pos = scanner.scan(bytes, pos, bytes.length, true);
      ends.push(pos);
    }
    assert.deepEqual(ends, [18, 23]);
    assert.equal(scanner.count, 2);
  });

  it("asks for more bytes wherever a record is cut short, even between CR and LF", () => {
    const scanner = new CsvScanner();
    for (let cut = 0; cut < 18; cut++) {
      assert.equal(scanner.scan(bytes, 0, cut, false), -1, `cut at ${cut}`);
    }
    assert.equal(scanner.scan(bytes, 0, 18, false), 18);
  });

  it("counts the line breaks a record spans", () => {
    const scanner = new CsvScanner();
    scanner.scan(bytes, 0, bytes.length, true);
    assert.equal(scanner.lineBreaks, 2);
  });

  it("refuses more fields than its limit", () => {
    const scanner = new CsvScanner({ maxFields: 3 });
    const wide = new TextEncoder().encode("a,b,c,d\r\n");
    assert.throws(() => scanner.scan(wide, 0, wide.length, true), {
      name: "CsvSyntaxError",
      column: 4,
    });
  });
});
