// Shared by the relay's end-to-end benchmarks: a round sends webhooks to a
// relay and is timed until the receiver (bench/_receiver.ts) has them all.
import { mkdtempSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The signing secret of the benchmarks' endpoint. */
export const BENCH_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/**
 * A relay with one tenant (`bench`, API key `key`) whose one endpoint takes
 * every event to `hookUrl`: writes its tenants file to a new temporary folder.
 * @returns the environment to start `server.ts` with (memory queue, no snapshot)
 */
export function oneTenantRelay(key: string, hookUrl: string): Record<string, string> {
  const tenants = join(mkdtempSync(join(tmpdir(), "tributary-bench-")), "tenants.json");
  writeFileSync(
    tenants,
    JSON.stringify({
      tenants: [{
        id: "bench",
        api_keys: [key],
        endpoints: [{ id: "e1", url: hookUrl, events: ["*"], secret: BENCH_SECRET }],
      }],
    }),
  );
  return {
    PORT: "0",
    HOST: "127.0.0.1",
    SERVICES: "relay",
    TENANTS_FILE: tenants,
    ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
    QUEUE_CAPACITY: "100000000",
    STATE_DIR: "",
  };
}

/** A relay's intake and the receiver it delivers to, with the connections to reach them. */
export class RelayRounds {
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 10 });
  readonly #receiverUrl: string;
  readonly #key: string;
  readonly #body: string;

  /**
   * @param receiverUrl the receiver's origin
   * @param key the tenant's API key
   * @param body the webhook to post
   */
  constructor(receiverUrl: string, key: string, body: string) {
    this.#receiverUrl = receiverUrl;
    this.#key = key;
    this.#body = body;
  }

  /**
   * Sends `count` webhooks to the relay at `relayUrl`, 10 at a time, and
   * waits (two minutes at most) for the receiver to have them all.
   * @returns deliveries per second, from the first POST to the last delivery
   */
  async round(relayUrl: string, count: number): Promise<number> {
    const before = await this.received();
    const started = performance.now();
    let sent = 0;
    await Promise.all(Array.from({ length: 10 }, async () => {
      while (sent < count) {
        sent++;
        const response = await this.#call(`${relayUrl}/webhook`, "POST", this.#body);
        if (response.status !== 202) {
          throw new Error(`intake answered ${response.status}: ${response.text}`);
        }
      }
    }));
    for (let i = 0; i < 6000 && (await this.received()) < before + count; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const got = (await this.received()) - before;
    if (got < count) throw new Error(`the receiver got ${got} of ${count} deliveries`);
    return count / ((performance.now() - started) / 1000);
  }

  /** Deliveries the receiver has had. */
  async received(): Promise<number> {
    return Number((await this.#call(`${this.#receiverUrl}/count`, "GET")).text);
  }

  close(): void {
    this.#agent.destroy();
  }

  #call(url: string, method: string, body?: string): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = body === undefined
        ? {}
        : { authorization: `Bearer ${this.#key}`, "content-type": "application/json" };
      const req = request(url, { method, agent: this.#agent, headers }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.end(body);
    });
  }
}
