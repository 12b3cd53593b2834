import type { RunningService } from "../http/mod.ts";
import { createRouter } from "../http/mod.ts";
import { contentSecurityPolicy, pageLoader, pageRoutes, type WebPage } from "../web/mod.ts";

/** Where the playground is served: beside the sync API's own paths, as a page of the sync service. */
export const PLAYGROUND_PATH = "/sync/playground";

/** Options of {@linkcode createPlaygroundService}. */
export interface PlaygroundServiceOptions {
  /**
   * Reads the page (its HTML, CSS, the pages' shared `page.css`, and modules, the sync client's among them); called once, as the service is made.
   * @default the page in `lib/accounts/playground/`, its modules built by `npm run build` (in a checkout, compiled once per process)
   */
  readonly load?: () => Promise<WebPage>;
}

/**
 * The sync playground, a page at `GET /sync/playground` (plain HTML, CSS and
 * ES modules compiled from TypeScript, under a strict Content-Security-Policy
 * with Trusted Types required): a user signs up or logs in, and two devices
 * of that user, each a sync client (`tributary/sync-client`, served with the
 * page as `sync_client.*.js`) with a store of its own, edit the user's
 * messages side by side, each with an Offline switch, its outbox, its
 * conflicts (decided by the policy chosen) and the revisions the server's
 * change stream pushes. It asks only this server's token endpoint, sign-up
 * and sync API; it needs no credential to load.
 * @param options how to load the page
 * @returns the service, to mount at `/sync/playground`
 */
export function createPlaygroundService(options: PlaygroundServiceOptions = {}): RunningService {
  const load = options.load ??
    pageLoader(new URL("./playground/", import.meta.url), "playground", { styles: ["page.css"] });
  const routes = pageRoutes(PLAYGROUND_PATH, load, {
    // Built from text only: no string ever becomes markup. Its icon is an empty data: image.
    contentSecurityPolicy: contentSecurityPolicy({ dataImages: true, requireTrustedTypes: true }),
    doc: {
      id: "playground",
      summary:
        "The sync playground, a page where two devices of one user sync the user's messages (it needs no token to load)",
      exampleAsset: "playground.css",
    },
  });
  return {
    name: "sync",
    prefixes: [PLAYGROUND_PATH],
    handler: createRouter(routes),
    describe: (origin) => ({
      endpoints: [{ label: "Sync playground", url: `${origin}${PLAYGROUND_PATH}` }],
      credentials: [],
      notes: [],
    }),
    drain: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}
