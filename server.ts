// The server: environment, then configuration, then the app, then the port
// and the signals (SIGTERM and SIGINT stop, SIGHUP reloads the datasets).
// Everything else lives in lib/app and the domains; every line goes through
// the app's logger (LOG_LEVEL, LOG_FORMAT).
import { createApp, createConsoleLogger, formatDescription, readConfig } from "./lib/app/mod.ts";

async function main(): Promise<void> {
  const config = readConfig(process.env);
  const app = createApp(config);
  const log = app.log;
  // A promise rejection nothing handled (a bug) is logged and fails readiness for a while, rather than ending the process.
  app.guard(process);
  // SIGHUP loads the datasets again, requests answered meanwhile (and, from the start, never stops the process).
  process.on("SIGHUP", () => {
    log.info("SIGHUP: reloading the datasets");
    app.reload().catch((error: unknown) =>
      log.error("SIGHUP: the datasets were not reloaded", error)
    );
  });
  await app.start();
  const address = await app.listen();
  const services = config.server.services;
  // Credentials as where they are kept; the demo data's values too, but only to a person at a terminal.
  for (
    const line of formatDescription(app.describe(address.publicUrl), {
      terminal: process.stdout.isTTY === true,
    })
  ) log.info(line);
  // The last start-up line, for scripts and tests: where to reach this process (as JSON, `event` and `url`).
  log.info(`tributary listening on ${address.publicUrl} (services: ${services.join(", ")})`, {
    event: "listening",
    url: address.url,
    publicUrl: address.publicUrl,
    services,
  });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void stop(signal));
  }

  /** Stops taking requests, drains and closes the services, and exits 0; 1 if that fails or overruns. */
  async function stop(signal: string): Promise<void> {
    log.info(`${signal}: finishing requests in flight, then exiting`);
    try {
      await app.close();
    } catch (error) {
      log.error(`${signal}: could not stop cleanly`, error);
      process.exit(1);
    }
    process.exit(0);
  }
}

main().catch((error: unknown) => {
  // Before the configuration is read (a setting it refuses is the usual reason), with the defaults: the message alone, no stack.
  createConsoleLogger({ level: "info", format: "auto" }).error(
    error instanceof Error ? error.message : String(error),
  );
  process.exit(1);
});
