// A webhook receiver for the delivery benchmark, in its own process: answers
// every POST 204 at once and counts it; GET /count answers the count.
// Usage: node --import tsx bench/_receiver.ts   (prints {"event": "listening", "url": ...})
import { createServer } from "node:http";
import { listenOnLoopback } from "./_listen.ts";

let received = 0;
const server = createServer((req, res) => {
  if (req.method === "GET") {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end(String(received));
    return;
  }
  req.resume();
  req.on("end", () => {
    received++;
    res.writeHead(204);
    res.end();
  });
});
server.keepAliveTimeout = 60_000;
listenOnLoopback(server);
