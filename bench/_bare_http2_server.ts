// A bare node:http2 secure server that answers every request with the same
// bytes: the HTTP/2 benchmark's baseline.
// Usage: _bare_http2_server.ts <body file> <content type> <cert> <key>
import { readFileSync } from "node:fs";
import { createSecureServer } from "node:http2";
import { listenOnLoopback } from "./_listen.ts";

const body = readFileSync(process.argv[2]!);
const type = process.argv[3]!;
const server = createSecureServer({
  cert: readFileSync(process.argv[4]!),
  key: readFileSync(process.argv[5]!),
  allowHTTP1: true,
}, (_req, res) => {
  res.writeHead(200, { "content-type": type, "content-length": body.length });
  res.end(body);
});
listenOnLoopback(server, "https");
