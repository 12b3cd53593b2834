// createHttpDelivery against a loopback receiver: each endpoint URL is parsed
// and checked against the address policy once, and every delivery to it sees
// the same verdict.
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import { createAddressPolicy, createHttpDelivery } from "../../lib/relay/mod.ts";

let url = "";
let received = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    received++;
    res.writeHead(204);
    res.end();
  });
});

before(async () => {
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});
after(() => receiver.close());

const send = (deliver: ReturnType<typeof createHttpDelivery>["deliver"], target: string) =>
  deliver({
    url: target,
    headers: { "content-type": "application/json" },
    body: "{}",
    timeoutMs: 5000,
  });

describe("createHttpDelivery", () => {
  it("delivers to an allowed URL each time, and refuses a blocked one each time without dialling", async () => {
    const allowed = createHttpDelivery({
      policy: createAddressPolicy({ allow: ["127.0.0.1/32"] }),
    });
    const refusing = createHttpDelivery({ policy: createAddressPolicy() });
    try {
      const before = received;
      for (let i = 0; i < 3; i++) {
        assert.deepEqual(await send(allowed.deliver, url), {
          kind: "response",
          status: 204,
          retryAfter: undefined,
        });
        const blocked = await send(refusing.deliver, url);
        assert.equal(blocked.kind, "blocked", `delivery ${i + 1}`);
        assert.match((blocked as { message: string }).message, /ALLOW_PRIVATE_TARGETS/);
      }
      assert.equal(received - before, 3, "only the allowed deliveries reached the receiver");
      const broken = await send(allowed.deliver, "not a url");
      assert.equal(broken.kind, "error");
      assert.deepEqual(await send(allowed.deliver, "not a url"), broken, "the same verdict again");
    } finally {
      allowed.close();
      refusing.close();
    }
  });
});
