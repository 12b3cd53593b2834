/**
 * Web pages the server serves: a strict Content-Security-Policy, routes for
 * a page and its files, and the loading (and, in a checkout, compiling) of
 * the pages' HTML, CSS and TypeScript.
 * @module
 */
export { contentSecurityPolicy } from "./content_security_policy.ts";
export type { ContentSecurityPolicyOptions } from "./content_security_policy.ts";
export { pageRoutes } from "./page_routes.ts";
export type { PageDoc, PageRoutesOptions, WebAsset, WebPage } from "./page_routes.ts";
export { pageLoader } from "./page_loader.ts";
export type { PageLoaderOptions } from "./page_loader.ts";
export { compileBrowserScripts } from "./compile_browser_scripts.ts";
export type { CompileBrowserScriptsOptions } from "./compile_browser_scripts.ts";
