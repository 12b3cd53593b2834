// A device process for the sync client's restart test: logs in with a file
// storage, queues three writes, and syncs with a fetch that, once the patch
// has reached the server, prints "sent" and the patch's key and never
// answers; the test kills it then.
// Usage: node --import tsx sync_device.ts <url> <folder> <user> <password>
import { createSyncClient, fileStorage } from "../../lib/sync_client/mod.ts";
import { message } from "./sync_server.ts";

const [url, folder, user, password] = process.argv.slice(2) as [string, string, string, string];
const client = createSyncClient({
  baseUrl: url,
  clientId: "demo-app",
  storage: fileStorage(folder),
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    if (init?.method === "POST" && new URL(input).pathname === "/api/v2/sync/user") {
      await response.text();
      process.stdout.write(`key ${new Headers(init.headers).get("idempotency-key")}\nsent\n`);
      return new Promise<Response>(() => {});
    }
    return response;
  },
});
await client.login(user, password);
await client.sync();
for (const n of [1, 2, 3]) await client.put("messages", message(n));
await client.sync();
