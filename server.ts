// The server: environment, then configuration, then the app, then the port
// and the signals (SIGTERM and SIGINT stop, SIGHUP reloads the datasets).
// Everything else lives in lib/app and the domains.
import { createApp, formatDescription, readConfig } from "./lib/app/mod.ts";

async function main(): Promise<void> {
  const config = readConfig(process.env);
  const app = createApp(config);
  // SIGHUP loads the datasets again, requests answered meanwhile (and, from the start, never stops the process).
  process.on("SIGHUP", () => {
    console.log("SIGHUP: reloading the datasets");
    app.reload().catch((error: unknown) => console.error(`SIGHUP: ${error instanceof Error ? error.message : String(error)}`));
  });
  await app.start();
  const address = await app.listen();
  const services = config.server.services;
  console.log(`tributary listening on ${address.publicUrl} (services: ${services.join(", ")})`);
  for (const line of formatDescription(app.describe(address.publicUrl))) console.log(line);
  // One line of JSON for scripts and tests: where to reach this process.
  console.log(JSON.stringify({ event: "listening", url: address.url, services }));
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => void stop(signal));
  }

  /** Stops taking requests, drains and closes the services, and exits 0; 1 if that fails or overruns. */
  async function stop(signal: string): Promise<void> {
    console.log(`${signal}: finishing requests in flight, then exiting`);
    try {
      await app.close();
    } catch (error) {
      console.error(`${signal}: could not stop cleanly: ${error instanceof Error ? error.message : String(error)}`);
      process.exit(1);
    }
    process.exit(0);
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
