// @node-oauth/oauth2-server behind node:http, with an in-memory model that
// hashes tokens like ours: the token benchmark's peer.
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import OAuth2Server from "@node-oauth/oauth2-server";
import { listenOnLoopback } from "./_listen.ts";

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");
const CLIENT = {
  id: "demo-backend",
  secretHash: sha256("demo-backend-secret"),
  grants: ["client_credentials"],
};
const tokens = new Map<
  string,
  { clientId: string; expiresAt: Date; scope: string[] | undefined }
>();

const oauth = new OAuth2Server({
  accessTokenLifetime: 3600,
  model: {
    getClient: async (clientId: string, clientSecret: string) => {
      if (clientId !== CLIENT.id) return false;
      const ok = timingSafeEqual(Buffer.from(sha256(clientSecret)), Buffer.from(CLIENT.secretHash));
      return ok ? { id: CLIENT.id, grants: CLIENT.grants } : false;
    },
    getUserFromClient: async () => ({}),
    saveToken: async (token, client, user) => {
      tokens.set(sha256(token.accessToken), {
        clientId: client.id,
        expiresAt: token.accessTokenExpiresAt!,
        scope: token.scope,
      });
      return { ...token, client, user };
    },
    validateScope: async (_user, _client, scope) => scope ?? ["SignUp"],
    getAccessToken: async () => false,
    verifyScope: async () => true,
  },
});

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (chunk: Buffer) => chunks.push(chunk));
  req.on("end", () => {
    const body = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString()));
    const request = new OAuth2Server.Request({
      method: req.method ?? "POST",
      query: {},
      headers: req.headers as Record<string, string>,
      body,
    });
    const response = new OAuth2Server.Response(res);
    oauth.token(request, response).then(
      () => {
        res.writeHead(response.status ?? 200, {
          ...response.headers,
          "content-type": "application/json",
        });
        res.end(JSON.stringify(response.body));
      },
      (error: { code?: number; name?: string; message?: string }) => {
        res.writeHead(error.code ?? 500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: error.name, error_description: error.message }));
      },
    );
  });
});
listenOnLoopback(server);
