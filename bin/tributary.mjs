#!/usr/bin/env node
// `npx tributary`: the admin command line (lib/cli). In a checkout, where the
// TypeScript sources sit beside this folder, they run as they are: through
// Node's own type stripping where it has it (Node 22.18 and later, as the
// container runs them), else through tsx (a dev dependency), so no build is
// needed. The installed package runs its built dist/, with plain Node.
import { existsSync } from "node:fs";

const sources = new URL("../lib/cli/mod.ts", import.meta.url);
const cli = !existsSync(sources)
  ? await import("../dist/cli/mod.js")
  : process.features.typescript
  ? await import(sources.href)
  : await (await import("tsx/esm/api")).tsImport(sources.href, import.meta.url);
await cli.main();
