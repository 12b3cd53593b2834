import type { RsaPublicKey } from "../crypto/mod.ts";
import {
  createRouter,
  errorStatuses,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  keepRoutes,
  readJson,
  type Router,
  withErrorStatuses,
} from "../http/mod.ts";
import { jsonResponse, parseQuery } from "../http/_internal.ts";
import { contentSecurityPolicy, pageLoader, pageRoutes, type WebPage } from "../web/mod.ts";
import type { AddressPolicy } from "./address_policy.ts";
import { RELAY_DOCS } from "./api_docs.ts";
import { RELAY_ERROR_STATUS } from "./error_status.ts";
import { RelayError } from "./errors.ts";
import { createMessageIds } from "./message_ids.ts";
import { acceptWebhook, checkIdempotencyKey, webhookAnswer } from "./accept_webhook.ts";
import {
  apiKeyOf,
  checkEndpointAddress,
  deadLetterQuery,
  iso,
  messageQuery,
  renderEndpoint,
  renderJob,
  renderMessage,
  renderMessagePage,
  renderSecrets,
  renderStats,
  replayTarget,
  rotateSecretInput,
  statsSince,
  unauthorized,
} from "./manage_relay.ts";
import type { Job, JobQueue } from "./queue.ts";
import type { TenantDirectory } from "./endpoint_directory.ts";
import type { Endpoint, Tenant } from "./tenants.ts";

/** Options of {@linkcode createRelayService}. */
export interface RelayServiceOptions {
  /** The tenants and endpoints: a `TenantRegistry`, or an `EndpointDirectory` that stores changes in the relay's backend. */
  readonly registry: TenantDirectory;
  /** Both halves of the port: intake queues and replays (lifecycle); the message log, dead letters and attempt counts show (inspection). */
  readonly queue: JobQueue;
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  /** Random bytes, for message ids and encryption keys. */
  readonly random: (size: number) => Uint8Array;
  /** Encrypts for every endpoint without its own key; undefined for none. */
  readonly encryptionKey?: RsaPublicKey | undefined;
  /**
   * Largest accepted webhook body, bytes.
   * @default {262144}
   */
  readonly maxPayloadBytes?: number;
  /**
   * How long an `Idempotency-Key` gives the first answer again, milliseconds.
   * @default {86400000}
   */
  readonly idempotencyTtlMs?: number;
  /** Told of every accepted message, e.g. to wake the worker and count it. */
  readonly onAccepted?: (tenantId: string, jobs: readonly Job[]) => void;
  /** Prefix the routes are mounted under, for links. @default {"/webhook"} */
  readonly base?: string;
  /**
   * Checks the address of an endpoint URL whose host is an IP address, as
   * deliveries will: an endpoint the check refuses is refused at creation
   * (400) rather than failing every delivery. Deliveries stay the authority.
   * @default no check
   */
  readonly addressPolicy?: AddressPolicy;
  /**
   * The relay portal served at `<base>/portal`, its files (`portal.css`,
   * `portal.js` and the pages' shared `page.css` and `api_client.js`) under it (the page
   * loads without a key and asks this API with the one the user gives it);
   * loaded once, as the service is made; false for none.
   * @default the portal page of the package (lib/relay/portal/), built by `npm run build` (in a checkout, compiled once per process)
   */
  readonly portal?: (() => Promise<WebPage>) | false;
}

const JSON_TYPE = "application/json";

/**
 * The relay's HTTP API, for tenants authenticated by their API key
 * (`Authorization: Bearer <key>` or `x-api-key`):
 * `POST /webhook` (intake), `GET|POST /webhook/endpoints`,
 * `GET|PATCH|DELETE /webhook/endpoints/:id`, `GET /webhook/endpoints/:id/secret`,
 * `POST /webhook/endpoints/:id/rotate-secret`, `GET /webhook/messages`
 * (the message log), `GET /webhook/messages/:id`, `GET /webhook/stats`
 * (attempts per endpoint), `GET /webhook/dead-letters`,
 * `POST /webhook/dead-letters/replay` and
 * `POST /webhook/dead-letters/:job/replay`; and the portal page,
 * `GET /webhook/portal`, which needs no key to load.
 * @param options registry, queue, clock, randomness and limits
 * @returns the handler
 * @example
 * ```ts
 * const handler = createRelayService({ registry, queue: new MemoryQueue(), now: Date.now, random: pooledRandom() });
 * ```
 */
export function createRelayService(options: RelayServiceOptions): Router {
  const base = options.base ?? "/webhook";
  const maxPayload = options.maxPayloadBytes ?? 262_144;
  const idempotencyTtl = options.idempotencyTtlMs ?? 86_400_000;
  const { registry, queue } = options;
  let lastIso = { ms: Number.NaN, text: "" };
  const nextMessageId = createMessageIds(options.random, options.now);

  /** The ISO 8601 form of a time, remembered for the next call in the same millisecond. */
  function isoOf(ms: number): string {
    if (lastIso.ms !== ms) lastIso = { ms, text: iso(ms) };
    return lastIso.text;
  }

  // Each tenant's routing function, made once rather than a closure a webhook.
  const routers = new Map<string, (event: string) => readonly Endpoint[]>();
  function routerOf(tenantId: string): (event: string) => readonly Endpoint[] {
    let router = routers.get(tenantId);
    if (router === undefined) {
      router = (event) => registry.route(tenantId, event);
      routers.set(tenantId, router);
    }
    return router;
  }

  function tenantOf(request: HttpRequest): Tenant {
    const tenant = registry.authenticate(apiKeyOf(request.headers));
    if (tenant === undefined) throw unauthorized("the API key is not a key of any tenant");
    return tenant;
  }

  async function intake(request: HttpRequest): Promise<HttpResponse> {
    const tenant = tenantOf(request);
    const idempotencyKey = checkIdempotencyKey(request.headers["idempotency-key"]);
    const body = await readBytes(request, maxPayload);
    const now = options.now();
    const accepted = acceptWebhook({ tenantId: tenant.id, body, idempotencyKey }, {
      now,
      timestamp: isoOf(now),
      messageId: nextMessageId(),
      route: routerOf(tenant.id),
      encryptionKey: options.encryptionKey,
      random: options.random,
      idempotencyTtlMs: idempotencyTtl,
    });
    const result = await queue.enqueue(accepted.batch);
    const answer = webhookAnswer(result, accepted, base);
    if (result.accepted) options.onAccepted?.(tenant.id, accepted.batch.jobs);
    return answer;
  }

  async function readEndpointBody(request: HttpRequest): Promise<unknown> {
    return readJson(request, { maxBytes: 65_536, maxDepth: 8 });
  }

  function checkedUrl(body: unknown): unknown {
    return checkEndpointAddress(body, options.addressPolicy);
  }

  const routes = createRouter([
    { method: "POST", path: base, handler: intake, doc: RELAY_DOCS.intake },
    {
      method: "GET",
      path: `${base}/endpoints`,
      handler: (request) => {
        const tenant = tenantOf(request);
        return jsonResponse(200, { data: registry.endpoints(tenant.id).map(renderEndpoint) });
      },
      doc: RELAY_DOCS.listEndpoints,
    },
    {
      method: "POST",
      path: `${base}/endpoints`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const endpoint = await registry.createEndpoint(
          tenant.id,
          checkedUrl(await readEndpointBody(request)),
        );
        return jsonResponse(201, {
          ...renderEndpoint(endpoint),
          secret: endpoint.secrets[0]!.secret,
        }, {
          location: `${base}/endpoints/${endpoint.id}`,
        });
      },
      doc: RELAY_DOCS.createEndpoint,
    },
    {
      method: "GET",
      path: `${base}/endpoints/:id`,
      handler: (request, params) =>
        jsonResponse(200, renderEndpoint(existing(tenantOf(request), params["id"]!))),
      doc: RELAY_DOCS.getEndpoint,
    },
    {
      method: "PATCH",
      path: `${base}/endpoints/:id`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        existing(tenant, params["id"]!);
        return jsonResponse(
          200,
          renderEndpoint(
            await registry.updateEndpoint(
              tenant.id,
              params["id"]!,
              checkedUrl(await readEndpointBody(request)),
            ),
          ),
        );
      },
      doc: RELAY_DOCS.updateEndpoint,
    },
    {
      method: "DELETE",
      path: `${base}/endpoints/:id`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        existing(tenant, params["id"]!);
        await registry.deleteEndpoint(tenant.id, params["id"]!);
        return { status: 204 };
      },
      doc: RELAY_DOCS.deleteEndpoint,
    },
    {
      method: "GET",
      path: `${base}/endpoints/:id/secret`,
      handler: (request, params) => {
        const endpoint = existing(tenantOf(request), params["id"]!);
        return jsonResponse(200, { secrets: renderSecrets(endpoint, options.now()) }, {
          "cache-control": "no-store",
        });
      },
      doc: RELAY_DOCS.secrets,
    },
    {
      method: "POST",
      path: `${base}/endpoints/:id/rotate-secret`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        existing(tenant, params["id"]!);
        const secret = rotateSecretInput(await readOptionalJson(request));
        const endpoint = await registry.rotateSecret(tenant.id, params["id"]!, secret);
        return jsonResponse(200, { secrets: renderSecrets(endpoint, options.now()) }, {
          "cache-control": "no-store",
        });
      },
      doc: RELAY_DOCS.rotateSecret,
    },
    {
      method: "GET",
      path: `${base}/messages`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const page = await queue.messages(tenant.id, messageQuery(parseQuery(request.query)));
        return jsonResponse(200, renderMessagePage(page));
      },
      doc: RELAY_DOCS.messages,
    },
    {
      method: "GET",
      path: `${base}/stats`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const since = statsSince(parseQuery(request.query), options.now());
        return jsonResponse(
          200,
          renderStats(
            registry.endpoints(tenant.id),
            await queue.attemptStats(tenant.id, since),
            since,
          ),
        );
      },
      doc: RELAY_DOCS.stats,
    },
    {
      method: "GET",
      path: `${base}/messages/:id`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        const jobs = await queue.message(tenant.id, params["id"]!);
        if (jobs.length === 0) {
          throw new RelayError(
            "ERR_RELAY_UNKNOWN_MESSAGE",
            `Cannot find message "${params["id"]}" of this tenant (or it is past its retention)`,
          );
        }
        return jsonResponse(200, renderMessage(params["id"]!, jobs));
      },
      doc: RELAY_DOCS.message,
    },
    {
      method: "GET",
      path: `${base}/dead-letters`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const jobs = await queue.deadLetters(tenant.id, deadLetterQuery(parseQuery(request.query)));
        return jsonResponse(200, { data: jobs.map(renderJob) });
      },
      doc: RELAY_DOCS.deadLetters,
    },
    {
      method: "POST",
      path: `${base}/dead-letters/replay`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const replayed = await queue.replay(
          tenant.id,
          replayTarget(await readOptionalJson(request)),
          options.now(),
        );
        return jsonResponse(202, { replayed });
      },
      doc: RELAY_DOCS.replayAll,
    },
    {
      method: "POST",
      path: `${base}/dead-letters/:job/replay`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        const replayed = await queue.replay(tenant.id, { jobId: params["job"]! }, options.now());
        if (replayed === 0) {
          throw new RelayError(
            "ERR_RELAY_UNKNOWN_MESSAGE",
            `Cannot find dead letter "${params["job"]}" of this tenant`,
          );
        }
        return jsonResponse(202, { replayed });
      },
      doc: RELAY_DOCS.replayOne,
    },
    ...(options.portal === false ? [] : pageRoutes(
      `${base}/portal`,
      options.portal ??
        pageLoader(new URL("./portal/", import.meta.url), "portal", { styles: ["page.css"] }),
      {
        // The portal builds its DOM from text only: no string ever becomes markup. Its icon is an empty data: image.
        contentSecurityPolicy: contentSecurityPolicy({
          requireTrustedTypes: true,
          dataImages: true,
        }),
        doc: {
          id: "portal",
          summary:
            "The relay portal, a page for a tenant (its API requests carry the key; the page needs none)",
          exampleAsset: "portal.css",
        },
      },
    )),
  ]);

  function existing(tenant: Tenant, id: string): Endpoint {
    const endpoint = registry.endpoint(tenant.id, id);
    if (endpoint === undefined) {
      throw new RelayError(
        "ERR_RELAY_UNKNOWN_ENDPOINT",
        `Cannot find endpoint "${id}" of this tenant`,
      );
    }
    return endpoint;
  }

  // Its errors answered as the JSON error body, with their statuses.
  return keepRoutes(withErrorStatuses(routes, STATUSES), routes);
}

/** The statuses of the codes the relay answers with. */
const STATUSES = errorStatuses(RELAY_ERROR_STATUS);

async function readBytes(request: HttpRequest, maxBytes: number): Promise<Uint8Array> {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== JSON_TYPE) {
    throw new HttpError(
      "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
      `Cannot read the webhook: expected Content-Type application/json but found "${
        type || "none"
      }"`,
    );
  }
  return request.body.bytes(maxBytes);
}

/** A JSON body when there is one: an empty body (no content type needed) is undefined. */
async function readOptionalJson(request: HttpRequest): Promise<unknown> {
  if (
    request.headers["content-length"] === "0" ||
    (request.headers["content-type"] === undefined &&
      request.headers["transfer-encoding"] === undefined)
  ) {
    return undefined;
  }
  return readJson(request, { maxBytes: 65_536, maxDepth: 4 });
}
