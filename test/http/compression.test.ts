import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { describe, it } from "node:test";
import { brotliDecompressSync, gunzipSync } from "node:zlib";
import { compressParts, negotiateEncoding, withCompression } from "../../lib/http/compression.ts";
import { type HttpRequest, type HttpResponse } from "../../lib/http/mod.ts";
import { bodyBytes, makeRequest } from "../_helpers/http.ts";

/** A request from a client that decodes `coding`: br is asked for as browsers ask (br named alone is answered uncompressed). */
function request(coding?: string, method = "GET"): HttpRequest {
  const header = coding === "br" ? "gzip, deflate, br" : coding;
  return makeRequest({
    method,
    path: "/",
    headers: header === undefined ? {} : { "accept-encoding": header },
  });
}

function decode(bytes: Buffer, coding: string | undefined): string {
  if (coding === "br") return brotliDecompressSync(bytes).toString();
  if (coding === "gzip") return gunzipSync(bytes).toString();
  return bytes.toString();
}

const JSON_BODY = JSON.stringify({
  value: Array.from(
    { length: 500 },
    (_, i) => ({ Id: i, CharacteristicName: "pH", ResultValue: i / 7 }),
  ),
});

describe("negotiateEncoding()", () => {
  const cases = [
    { header: undefined, expected: undefined },
    { header: "", expected: undefined },
    { header: "gzip, deflate, br", expected: "br" },
    { header: "gzip", expected: "gzip" },
    { header: "br;q=0.5, gzip;q=0.8", expected: "gzip" },
    { header: "br;q=0, gzip;q=0", expected: undefined },
    { header: "identity", expected: undefined },
    { header: "deflate, compress", expected: undefined },
    { header: "*", expected: "br" },
    { header: "*;q=0.3, br;q=0", expected: "gzip" },
    { header: "GZIP;Q=1", expected: "gzip" },
    { header: "x-gzip", expected: "gzip" },
    // br named alone: the DataStream clients' header, which Python's requests and the shell's curl cannot decode.
    { header: "br", expected: undefined },
    { header: " BR ", expected: undefined },
    { header: "br;q=1, gzip;q=0", expected: undefined },
    { header: "br, identity", expected: undefined },
    { header: "br, gzip, deflate", expected: "br" },
    { header: "deflate, gzip, br, zstd", expected: "br" },
    { header: "br, deflate", expected: "br" },
    { header: "br, *", expected: "br" },
    { header: "gzip;q=0.5, br", expected: "br" },
    { header: "br;q=0.5, gzip", expected: "gzip" },
    { header: "gzip, deflate", expected: "gzip" },
    { header: "deflate", expected: undefined },
    // A client that refuses identity gets what it accepts.
    { header: "br, identity;q=0", expected: "br" },
    { header: "br, *;q=0", expected: "br" },
    { header: "br, *;q=0, identity", expected: undefined },
    { header: "*;q=0", expected: undefined },
  ] as const;
  for (const c of cases) {
    it(`${JSON.stringify(c.header)} → ${c.expected ?? "identity"}`, () =>
      assert.equal(negotiateEncoding(c.header), c.expected));
  }
});

describe("withCompression()", () => {
  const json = (body: NonNullable<HttpResponse["body"]>, headers: Record<string, string> = {}) =>
    withCompression(() => ({
      status: 200,
      headers: {
        "content-type": "application/json; charset=utf-8",
        "content-length": "1",
        ...headers,
      },
      body,
    }));

  for (const coding of ["br", "gzip"] as const) {
    it(`sends a whole JSON body ${coding}, equal once decoded, with Vary and without the old length`, async () => {
      const answer = await json(JSON_BODY)(request(coding));
      assert.equal(answer.headers?.["content-encoding"], coding);
      assert.equal(answer.headers?.["vary"], "Accept-Encoding");
      assert.equal(answer.headers?.["content-length"], undefined);
      const bytes = await bodyBytes(answer);
      assert.ok(bytes.length < Buffer.byteLength(JSON_BODY) / 3, `${bytes.length} bytes`);
      assert.equal(decode(bytes, coding), JSON_BODY);
    });
  }

  it("joins a body of parts, and makes a strong ETag weak (the bytes differ per coding)", async () => {
    const parts = [Buffer.from(JSON_BODY.slice(0, 100)), Buffer.from(JSON_BODY.slice(100))];
    const answer = await json(parts, { etag: '"r1"', vary: "Origin" })(request("gzip"));
    assert.equal(decode(await bodyBytes(answer), "gzip"), JSON_BODY);
    assert.equal(answer.headers?.["etag"], 'W/"r1"');
    assert.equal(answer.headers?.["vary"], "Origin, Accept-Encoding");
  });

  it("streams a CSV body compressed chunk by chunk, and closes the source when the reader stops early", async () => {
    let closed = false;
    async function* rows(): AsyncGenerator<string> {
      try {
        yield "Id,Value\n";
        for (let i = 0; i < 20_000; i++) yield `${i},${(i * 0.37).toFixed(3)}\n`;
      } finally {
        closed = true;
      }
    }
    const handler = withCompression(() => ({
      status: 200,
      headers: { "content-type": "text/csv; charset=utf-8" },
      body: rows(),
    }));
    const whole = await handler(request("br"));
    let expected = "Id,Value\n";
    for (let i = 0; i < 20_000; i++) expected += `${i},${(i * 0.37).toFixed(3)}\n`;
    assert.equal(decode(await bodyBytes(whole), "br"), expected);
    assert.equal(closed, true);
    closed = false;
    const early = await handler(request("gzip"));
    for await (const _ of early.body as AsyncIterable<Uint8Array>) break;
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(closed, true, "the CSV generator was returned");
  });

  it("leaves identity requests, small bodies, other types, HEAD and 304 as they are (Vary still said)", async () => {
    const identity = await json(JSON_BODY)(request("identity"));
    assert.equal(identity.body, JSON_BODY);
    assert.equal(identity.headers?.["vary"], "Accept-Encoding");
    assert.equal((await json("{}")(request("br"))).headers?.["content-encoding"], undefined);
    const text = await withCompression(() => ({
      status: 200,
      headers: { "content-type": "text/plain" },
      body: "x".repeat(5000),
    }))(request("br"));
    assert.equal(text.headers?.["content-encoding"], undefined);
    assert.equal(
      (await json(JSON_BODY)(request("br", "HEAD"))).headers?.["content-encoding"],
      undefined,
    );
    const notModified = await withCompression(() => ({ status: 304, headers: { etag: '"a"' } }))(
      request("br"),
    );
    assert.deepEqual(notModified.headers, { etag: '"a"' });
    const small = await withCompression(
      () => ({ status: 200, headers: { "content-type": "application/json" }, body: JSON_BODY }),
      { minBytes: 1_000_000 },
    )(request("br"));
    assert.equal(small.headers?.["content-encoding"], undefined);
  });
});

describe("compressParts()", () => {
  const text = Buffer.from(JSON_BODY.repeat(40));
  /** The text in parts of `size` bytes, each made only when asked for. */
  function* parts(size: number, made: number[] = []): Generator<Uint8Array> {
    for (let at = 0; at < text.length; at += size) {
      made.push(at);
      yield text.subarray(at, at + size);
    }
  }

  for (const coding of ["gzip", "br"] as const) {
    it(`makes one ${coding} body of parts made on demand, equal once decoded, whatever the parts' sizes`, async () => {
      for (const size of [text.length, 100_000, 4096, 777]) {
        const made: number[] = [];
        const body = Buffer.concat(await compressParts(parts(size, made), coding));
        assert.equal(decode(body, coding), text.toString(), `parts of ${size} bytes`);
        assert.equal(made.length, Math.ceil(text.length / size));
        // Parts of a few kilobytes are compressed each on its own, so only bigger ones compress well.
        if (size >= 100_000) {
          assert.ok(
            body.length < text.length / 10,
            `${body.length} bytes compressed from ${text.length}`,
          );
        }
      }
    });

    it(`makes an empty ${coding} body of no parts, and throws what the parts throw`, async () => {
      assert.equal(decode(Buffer.concat(await compressParts([], coding)), coding), "");
      function* failing(): Generator<Uint8Array> {
        yield text.subarray(0, 50_000);
        throw new RangeError("too large");
      }
      await assert.rejects(compressParts(failing(), coding), {
        name: "RangeError",
        message: "too large",
      });
    });
  }

  it("makes gzip that an independent decoder reads: the gzip program checks the CRC-32 and the length", async () => {
    const body = Buffer.concat(await compressParts(parts(65_536), "gzip"));
    const out = spawnSync("gzip", ["-dc"], { input: body, maxBuffer: 1 << 26 });
    assert.equal(out.status, 0, out.stderr.toString());
    assert.ok(out.stdout.equals(text));
    // A damaged trailer is caught: the CRC-32 is really the body's.
    const damaged = Buffer.from(body);
    damaged[damaged.length - 8]! ^= 1;
    assert.notEqual(spawnSync("gzip", ["-dc"], { input: damaged }).status, 0);
    assert.throws(() => gunzipSync(damaged), /incorrect data check/);
  });
});
