/**
 * Web pages the server serves: a strict Content-Security-Policy, routes for
 * a page and its files, and the loading of the pages' HTML, CSS and
 * modules (built by `npm run build`; in a checkout, compiled once per
 * process from the TypeScript as the services that serve them start).
 * @module
 */
export { contentSecurityPolicy } from "./content_security_policy.ts";
export { pageRoutes } from "./page_routes.ts";
export type { WebPage } from "./page_routes.ts";
export { pageLoader } from "./page_loader.ts";
