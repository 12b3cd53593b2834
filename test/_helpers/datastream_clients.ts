// The four official DataStream clients as they behave on the wire
// (reference/datastream.md §2): the query string each builds, the headers
// each sends, what each can decode, how each follows pages and partitions a
// download by location. Requests go through node:http, which decodes
// nothing, so that an answer in a coding a client cannot read fails here as
// it fails for that client.
import { request as httpRequest } from "node:http";
import { brotliDecompressSync, gunzipSync, inflateRawSync, inflateSync } from "node:zlib";

/** A query as a client holds it: option names with their `$`. */
export type Query = Readonly<Record<string, string | number>>;

/** datastreamjs: URLSearchParams, then "+" replaced by "%20" (so "$" is %24 and "'" is %27). */
export function encodeJs(qs: Query): string {
  return `${new URLSearchParams(
    Object.entries(qs).map(([k, v]): [string, string] => [k, String(v)]),
  )}`.replaceAll("+", "%20");
}

/** datastream-py: requests' urlencode, i.e. quote_plus: spaces as "+", everything else escaped but [A-Za-z0-9_.~-]. */
export function encodePython(qs: Query): string {
  const quotePlus = (text: string): string =>
    [...new TextEncoder().encode(text)].map((byte) => {
      const c = String.fromCharCode(byte);
      if (/[A-Za-z0-9_.~-]/.test(c)) return c;
      if (c === " ") return "+";
      return `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
    }).join("");
  return Object.entries(qs).map(([k, v]) => `${quotePlus(k)}=${quotePlus(String(v))}`).join("&");
}

/** datastreamr: httr's curl_escape on names and values (spaces as %20). */
export function encodeR(qs: Query): string {
  const escape = (text: string): string =>
    encodeURIComponent(text).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
  return Object.entries(qs).map(([k, v]) => `${escape(k)}=${escape(String(v))}`).join("&");
}

/** datastreamsh: its urlencode(), byte by byte, for values; names written as %24top etc. */
export function encodeShell(qs: Query): string {
  const urlencode = (text: string): string =>
    [...new TextEncoder().encode(text)].map((byte) => {
      const c = String.fromCharCode(byte);
      return /[a-zA-Z0-9.~_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
    }).join("");
  return Object.entries(qs).map(([k, v]) => `${k.replace("$", "%24")}=${urlencode(String(v))}`)
    .join("&");
}

/** A content coding a client may be able to decode. */
export type Coding = "br" | "gzip" | "deflate";

/** One official client as it behaves on the wire. */
export interface OfficialClient {
  readonly name: string;
  /** The `Accept-Encoding` it sends. */
  readonly acceptEncoding: string;
  /** What it can decode as installed from its own instructions. */
  readonly decodes: readonly Coding[];
  readonly encode: (qs: Query) => string;
  /** Where it reads the next page's URL. */
  readonly next: "link-header" | "body";
  /** R writes `LocationId eq '123'`, the others `LocationId eq 123`. */
  readonly quotesLocationId: boolean;
  /** Other headers it sends. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** The four official clients (reference/datastream.md §2.1 and the issue's table). */
export const OFFICIAL_CLIENTS: readonly OfficialClient[] = [
  // requests without the optional brotli module: it sends br but decodes only gzip and deflate.
  {
    name: "Python (datastream-py)",
    acceptEncoding: "br",
    decodes: ["gzip", "deflate"],
    encode: encodePython,
    next: "body",
    quotesLocationId: false,
  },
  // curl --http2 -sG without --compressed: nothing is decoded, jq reads the bytes as they come.
  {
    name: "shell (datastreamsh)",
    acceptEncoding: "br",
    decodes: [],
    encode: encodeShell,
    next: "body",
    quotesLocationId: false,
  },
  // Node's fetch decodes br, gzip and deflate.
  {
    name: "JavaScript (datastreamjs)",
    acceptEncoding: "br",
    decodes: ["br", "gzip", "deflate"],
    encode: encodeJs,
    next: "link-header",
    quotesLocationId: false,
    headers: { "user-agent": "datastreamjs/0.1.0 node/20.20.2" },
  },
  // httr2 on libcurl.
  {
    name: "R (datastreamr)",
    acceptEncoding: "br, gzip, deflate",
    decodes: ["br", "gzip", "deflate"],
    encode: encodeR,
    next: "body",
    quotesLocationId: true,
  },
];

/** An answer as a client reads it: decoded with what it can decode. */
export interface ClientAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The coding the server used, `identity` for none. */
  readonly coding: string;
  readonly text: string;
}

/** One page of a collection as a client read it, in {@linkcode ClientSession.rows}. */
export interface PageRead {
  /** The URL it asked: the first page's, then each next link as the client found it. */
  readonly url: string;
  /** The coding the server used, `identity` for none. */
  readonly coding: string;
  /** Its size once decoded. */
  readonly bytes: number;
  readonly rows: number;
}

/** Thrown when an answer comes in a coding the client cannot decode (what makes the real client fail). */
export class UndecodableAnswer extends Error {
  constructor(client: string, coding: string, url: string) {
    super(`${client} cannot decode an answer sent with Content-Encoding: ${coding} (${url})`);
    this.name = "UndecodableAnswer";
  }
}

/** The options a collection's request carries, from the client's `$select`, `$filter` and `$top`. */
function clientQuery(top: number, select: string | undefined, filter: string | undefined): Query {
  return {
    $top: top,
    ...(select === undefined ? {} : { $select: select }),
    ...(filter === undefined ? {} : { $filter: filter }),
  };
}

/** The clients' test for a filter that is already narrow enough not to partition. */
const PARTITIONED = /(^Id| Id|^LocationId| LocationId)/;

/** One client with its key, against one server; counts what it sends. */
export class ClientSession {
  readonly client: OfficialClient;
  readonly #origin: string;
  readonly #key: string;
  /** The status of every request sent, in order. */
  readonly statuses: number[] = [];
  /** Every page read by {@linkcode rows}, in order. */
  readonly pages: PageRead[] = [];

  /**
   * @param client the client's behaviour
   * @param origin the server, e.g. `http://127.0.0.1:8000`
   * @param key its API key
   */
  constructor(client: OfficialClient, origin: string, key: string) {
    this.client = client;
    this.#origin = origin;
    this.#key = key;
  }

  /**
   * One GET as the client sends it.
   * @param target a path and query, or an absolute URL (a next link)
   * @param accept the `Accept` header (the clients send `application/vnd.api+json`)
   * @throws {UndecodableAnswer} when the answer's coding is one the client cannot decode
   */
  async get(target: string, accept = "application/vnd.api+json"): Promise<ClientAnswer> {
    const url = new URL(target, this.#origin);
    const { status, headers, body } = await new Promise<
      { status: number; headers: ClientAnswer["headers"]; body: Buffer }
    >((resolve, reject) => {
      const outgoing = httpRequest(url, {
        headers: {
          accept,
          "accept-encoding": this.client.acceptEncoding,
          "x-api-key": this.#key,
          ...this.client.headers,
        },
      }, (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on(
          "end",
          () =>
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              body: Buffer.concat(chunks),
            }),
        );
        response.on("error", reject);
      });
      outgoing.on("error", reject);
      outgoing.end();
    });
    this.statuses.push(status);
    const coding = String(headers["content-encoding"] ?? "identity").toLowerCase();
    return { status, headers, coding, text: this.#decode(coding, body, url.href).toString("utf8") };
  }

  #decode(coding: string, body: Buffer, url: string): Buffer {
    if (coding === "identity") return body;
    if (!(this.client.decodes as readonly string[]).includes(coding)) {
      throw new UndecodableAnswer(this.client.name, coding, url);
    }
    if (coding === "br") return brotliDecompressSync(body);
    if (coding === "gzip") return gunzipSync(body);
    // deflate: zlib-wrapped as the RFC says, or raw as some servers send it; clients take both.
    try {
      return inflateSync(body);
    } catch {
      return inflateRawSync(body);
    }
  }

  /**
   * Every row of a collection, page after page as the client follows them
   * (the `Link` header for JS, `@odata.nextLink` for the others).
   * @param collection e.g. `Locations`
   * @param qs the client's options, `$top` included
   * @throws {Error} on a status other than 200, as every client stops
   */
  async rows(collection: string, qs: Query): Promise<Record<string, unknown>[]> {
    const rows: Record<string, unknown>[] = [];
    let target: string | undefined = `/v1/odata/v4/${collection}?${this.client.encode(qs)}`;
    while (target !== undefined) {
      const answer = await this.get(target);
      if (answer.status !== 200) {
        throw new Error(
          `${this.client.name}: ${answer.status} for ${target}: ${answer.text.slice(0, 200)}`,
        );
      }
      const page = JSON.parse(answer.text) as {
        value: Record<string, unknown>[];
        "@odata.nextLink"?: string;
      };
      rows.push(...page.value);
      this.pages.push({
        url: new URL(target, this.#origin).href,
        coding: answer.coding,
        bytes: Buffer.byteLength(answer.text),
        rows: page.value.length,
      });
      if (this.client.next === "body") target = page["@odata.nextLink"];
      else target = /<([^>]+)>;\s*rel="next"/.exec(String(answer.headers["link"] ?? ""))?.[1];
    }
    return rows;
  }

  /**
   * A download of /Observations or /Records as every client makes it: as it
   * is when the filter names an Id or LocationId; otherwise the locations
   * the filter matches first, then one request (and its pages) per location.
   * @param collection `Observations` or `Records`
   * @param top the page size (10,000 in every client)
   * @param select the `$select`, if any
   * @param filter the `$filter`, if any
   */
  async partitioned(
    collection: string,
    top: number,
    select?: string,
    filter?: string,
  ): Promise<Record<string, unknown>[]> {
    if (filter !== undefined && PARTITIONED.test(filter)) {
      return this.rows(collection, clientQuery(top, select, filter));
    }
    const locations = await this.rows("Locations", clientQuery(top, "Id", filter));
    const rows: Record<string, unknown>[] = [];
    for (const location of locations) {
      const id = this.client.quotesLocationId
        ? `'${String(location["Id"])}'`
        : String(location["Id"]);
      const own = `LocationId eq ${id}${filter === undefined ? "" : ` and ${filter}`}`;
      rows.push(...await this.rows(collection, clientQuery(top, select, own)));
    }
    return rows;
  }
}
