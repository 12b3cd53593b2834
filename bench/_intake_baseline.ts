// The intake benchmark's baseline: a bare node:http server that reads each
// body, parses it as JSON and answers 202 with a small JSON body.
import { createServer } from "node:http";
import { listenOnLoopback } from "./_listen.ts";

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const event = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { event: string }).event;
    const body = JSON.stringify({ id: "msg_0", event, endpoints: ["e1"] });
    res.writeHead(202, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(body),
    });
    res.end(body);
  });
});
listenOnLoopback(server);
