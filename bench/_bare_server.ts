// A bare node:http server that answers every request with the same bytes:
// the HTTP benchmark's baseline. Usage: _bare_server.ts <body file> <content type>
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { listenOnLoopback } from "./_listen.ts";

const body = readFileSync(process.argv[2]!);
const type = process.argv[3]!;
const server = createServer((_req, res) => {
  res.writeHead(200, { "content-type": type, "content-length": body.length });
  res.end(body);
});
listenOnLoopback(server);
