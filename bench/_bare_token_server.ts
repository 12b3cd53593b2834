// The token benchmark's floor: a bare node:http server doing the least a
// client_credentials grant must do (check the grant and the Basic
// credentials, make a random 256-bit token, keep its SHA-256, answer the
// same JSON with the same headers), with nothing of a framework around it.
import { createHash, randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { listenOnLoopback } from "./_listen.ts";

const CREDENTIALS = `Basic ${btoa("demo-backend:demo-backend-secret")}`;
const tokens = new Map<string, number>();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    if (body !== "grant_type=client_credentials" || req.headers.authorization !== CREDENTIALS) {
      res.writeHead(400, { "content-type": "application/json" });
      res.end('{"error":"invalid_request"}');
      return;
    }
    const token = randomBytes(32).toString("base64url");
    tokens.set(createHash("sha256").update(token).digest("hex"), Date.now() + 3_600_000);
    const answer =
      `{"access_token":"${token}","token_type":"Bearer","expires_in":3600,"scope":"SignUp"}`;
    res.writeHead(200, {
      "cache-control": "no-store",
      pragma: "no-cache",
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(answer)),
    });
    res.end(answer);
  });
});
listenOnLoopback(server);
