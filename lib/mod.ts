/**
 * tributary: a water-data OData API, an OAuth token and sync service, and a
 * multi-tenant webhook relay, as one zero-dependency library.
 *
 * The root exports the stable surface of every domain by name
 * (`import { parseFilter, createApp } from "tributary"`); each domain is also
 * its own entry point (`tributary/odata`, `tributary/relay`, ...), which loads
 * only that domain. The Redis and Kafka queues live at `tributary/relay/redis`
 * and `tributary/relay/kafka`, so that nothing here needs their clients.
 *
 * This file is the one place that re-exports with `*`: the root is derived
 * from the domains' own lists rather than kept in step with them, and the
 * compiler refuses two domains exporting the same name.
 * @module
 */
export * from "./odata/mod.ts";
export * from "./water/mod.ts";
export * from "./auth/mod.ts";
export * from "./sync/mod.ts";
export * from "./relay/mod.ts";
export * from "./http/mod.ts";
export * from "./crypto/mod.ts";
export * from "./metrics/mod.ts";
export * from "./config/mod.ts";
export * from "./storage/mod.ts";
export * from "./log/mod.ts";
export * from "./app/mod.ts";
