import { SERVER_SETTINGS } from "../app/_internal.ts";
import { optionFlag, optionList, optionText, settingValue, usage } from "./_input.ts";
import { CliError } from "./errors.ts";
import { CLI_SETTINGS } from "./settings.ts";
import type { CliIo, CommandInput, CommandResult, CommandSpec, OptionSpec } from "./types.ts";

// The endpoint commands go through the running server's relay API with the
// tenant's key, whatever STORAGE_TYPE is: with memory the endpoints live in
// the server's process (and its STATE_DIR journal, locked by it), and on
// Redis and Kafka the API is what checks a change (the address policy of
// ALLOW_PRIVATE_TARGETS, the endpoint limit, a change racing another) and
// tells every relay process. One path, the one tenants use, so the server
// sees each change as soon as the command returns.

/** Where the relay's routes are mounted. */
const RELAY_BASE = "/webhook";

const CONNECTION: Readonly<Record<string, OptionSpec>> = {
  server: {
    type: "string",
    value: "URL",
    doc: "the running server (default: TRIBUTARY_URL, else the address HOST and PORT make)",
  },
  "api-key": {
    type: "string",
    value: "KEY",
    doc:
      "the tenant's API key (default: TRIBUTARY_API_KEY, which keeps it out of the process list)",
  },
};

const CONNECTION_SETTINGS = [
  CLI_SETTINGS.serverUrl,
  CLI_SETTINGS.apiKey,
  SERVER_SETTINGS.host,
  SERVER_SETTINGS.port,
  SERVER_SETTINGS.tlsCertFile,
];

const ENDPOINT_DETAILS = [
  "Goes through the running server's relay API with the tenant's key, so the server (every relay process on a shared backend) sees the change at once.",
];

/** `endpoint list`: the tenant's endpoints, as the relay API lists them. */
export const ENDPOINT_LIST: CommandSpec = {
  path: ["endpoint", "list"],
  summary: "List a tenant's relay endpoints",
  details: ENDPOINT_DETAILS,
  positionals: [],
  options: CONNECTION,
  settings: CONNECTION_SETTINGS,
  examples: [
    "endpoint list --server http://127.0.0.1:8000",
    "endpoint list --json | jq -r '.data[].id'",
  ],
  run: listEndpoints,
};

/** `endpoint add`: a new endpoint of the tenant; its signing secret is printed. */
export const ENDPOINT_ADD: CommandSpec = {
  path: ["endpoint", "add"],
  summary: "Create a relay endpoint for a tenant; prints its signing secret",
  details: ENDPOINT_DETAILS,
  positionals: [],
  options: {
    url: {
      type: "string",
      required: true,
      value: "URL",
      doc: "where deliveries go, http or https",
    },
    event: {
      type: "string",
      multiple: true,
      required: true,
      value: "PATTERN",
      doc: "events it receives: a name, a prefix such as order.*, or *",
    },
    id: { type: "string", value: "ID", doc: "its id (default: made by the server)" },
    secret: {
      type: "string",
      value: "whsec_...",
      doc: "its signing secret (default: made by the server)",
    },
    "public-key-file": {
      type: "string",
      value: "FILE",
      doc: "an RSA public key (PEM) to encrypt its deliveries for",
    },
    "rate-limit": { type: "string", value: "N", doc: "deliveries per second at most" },
    disabled: { type: "boolean", doc: "create it disabled" },
    ...CONNECTION,
  },
  settings: CONNECTION_SETTINGS,
  examples: [
    "endpoint add --url https://hooks.example.com/in --event 'order.*' --event user.created",
    "endpoint add --id orders --url https://hooks.example.com/in --event '*' --json | jq -r .secret",
  ],
  run: addEndpoint,
};

/** `endpoint rotate-secret <id>`: a new signing secret; the old one signs beside it for the overlap. */
export const ENDPOINT_ROTATE_SECRET: CommandSpec = {
  path: ["endpoint", "rotate-secret"],
  summary: "Give a relay endpoint a new signing secret; the old one keeps signing for the overlap",
  details: [
    ...ENDPOINT_DETAILS,
    "The old secret signs beside the new one for SECRET_ROTATION_OVERLAP_SECONDS, so the receiver can switch.",
  ],
  positionals: [{ name: "id", doc: "the endpoint's id" }],
  options: {
    secret: {
      type: "string",
      value: "whsec_...",
      doc: "the new secret (default: made by the server)",
    },
    ...CONNECTION,
  },
  settings: CONNECTION_SETTINGS,
  examples: [
    "endpoint rotate-secret orders",
    "endpoint rotate-secret orders --json | jq -r '.secrets[0].secret'",
  ],
  run: rotateSecret,
};

interface Connection {
  readonly server: string;
  readonly key: string;
}

async function listEndpoints(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const answer = await call(io, connect(ENDPOINT_LIST, input, io), "GET", "/endpoints") as {
    data: EndpointView[];
  };
  const lines = answer.data.length === 0
    ? ["The tenant has no endpoints"]
    : answer.data.map((endpoint) =>
      [
        endpoint.id,
        endpoint.enabled
          ? "enabled"
          : `disabled (${endpoint.disabled_reason ?? "no reason given"})`,
        endpoint.url,
        endpoint.events.join(","),
      ].join("  ")
    );
  return { exitCode: 0, json: answer, lines };
}

async function addEndpoint(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const connection = connect(ENDPOINT_ADD, input, io);
  const body: Record<string, unknown> = {
    url: optionText(input, "url"),
    events: optionList(input, "event"),
  };
  const id = optionText(input, "id");
  if (id !== undefined) body["id"] = id;
  const secret = optionText(input, "secret");
  if (secret !== undefined) body["secret"] = secret;
  const keyFile = optionText(input, "public-key-file");
  if (keyFile !== undefined) {
    const pem = await io.readText(keyFile);
    if (pem === undefined) {
      throw usage(ENDPOINT_ADD, `--public-key-file names ${keyFile}, which does not exist`);
    }
    body["public_key"] = pem;
  }
  const rate = optionText(input, "rate-limit");
  if (rate !== undefined) {
    const value = Number(rate);
    if (!/^[0-9]+(\.[0-9]+)?$/.test(rate) || !Number.isFinite(value)) {
      throw usage(
        ENDPOINT_ADD,
        `--rate-limit must be a number of deliveries per second: found "${rate}"`,
      );
    }
    body["rate_limit_per_second"] = value;
  }
  if (optionFlag(input, "disabled")) body["enabled"] = false;
  const endpoint = await call(io, connection, "POST", "/endpoints", body) as EndpointView & {
    secret: string;
  };
  return {
    exitCode: 0,
    json: endpoint,
    lines: [
      `Created endpoint ${endpoint.id} for ${endpoint.url} (events: ${endpoint.events.join(", ")})`,
      `secret: ${endpoint.secret}`,
    ],
  };
}

async function rotateSecret(input: CommandInput, io: CliIo): Promise<CommandResult> {
  const connection = connect(ENDPOINT_ROTATE_SECRET, input, io);
  const id = input.positionals[0]!;
  const secret = optionText(input, "secret");
  const path = `/endpoints/${encodeURIComponent(id)}/rotate-secret`;
  const answer = await call(
    io,
    connection,
    "POST",
    path,
    secret === undefined ? undefined : { secret },
  ) as { secrets: SecretView[] };
  const [current, ...old] = answer.secrets;
  return {
    exitCode: 0,
    json: answer,
    lines: [
      `New secret of endpoint ${id}: ${current?.secret ?? ""}`,
      ...old.map((entry) =>
        `Old secret ${entry.secret} signs until ${entry.expires_at ?? "further notice"}`
      ),
    ],
  };
}

interface EndpointView {
  readonly id: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly enabled: boolean;
  readonly disabled_reason: string | null;
}

interface SecretView {
  readonly secret: string;
  readonly expires_at: string | null;
}

/**
 * The server and key a command uses: `--server`, else TRIBUTARY_URL, else the
 * address the server's own HOST, PORT and TLS settings make; `--api-key`, else TRIBUTARY_API_KEY.
 */
function connect(command: CommandSpec, input: CommandInput, io: CliIo): Connection {
  const key = optionText(input, "api-key") ?? settingValue(CLI_SETTINGS.apiKey, io.env);
  if (key === "") {
    throw usage(command, "give the tenant's API key in TRIBUTARY_API_KEY or with --api-key");
  }
  const given = optionText(input, "server");
  if (given !== undefined) {
    const url = URL.parse(given);
    if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
      throw usage(command, `--server must be an http or https URL: found "${given}"`);
    }
    return { server: url.href.replace(/\/+$/, ""), key };
  }
  const configured = settingValue(CLI_SETTINGS.serverUrl, io.env);
  if (configured !== undefined) return { server: configured, key };
  const port = settingValue(SERVER_SETTINGS.port, io.env);
  if (port === 0) {
    throw usage(
      command,
      "PORT is 0 (the server picks a free port): give the server's URL with --server or TRIBUTARY_URL",
    );
  }
  const scheme = settingValue(SERVER_SETTINGS.tlsCertFile, io.env) === "" ? "http" : "https";
  return {
    server: `${scheme}://${hostOf(settingValue(SERVER_SETTINGS.host, io.env))}:${port}`,
    key,
  };
}

/** The address to reach a server listening on `host`: loopback for a wildcard, brackets for IPv6. */
function hostOf(host: string): string {
  if (host === "0.0.0.0" || host === "") return "127.0.0.1";
  if (host === "::" || host === "[::]") return "[::1]";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/**
 * Calls the relay API.
 * @returns the answer's JSON
 * @throws {CliError} `ERR_CLI_UNREACHABLE` when the server cannot be reached, `ERR_CLI_SERVER` with its message when it answers an error
 */
async function call(
  io: CliIo,
  connection: Connection,
  method: string,
  path: string,
  body?: unknown,
): Promise<unknown> {
  const url = `${connection.server}${RELAY_BASE}${path}`;
  let response: Response;
  try {
    response = await io.fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${connection.key}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
    const why = typeof cause?.code === "string"
      ? cause.code
      : typeof cause?.message === "string"
      ? cause.message
      : (error as Error).message;
    throw new CliError(
      "ERR_CLI_UNREACHABLE",
      `Cannot reach the server at ${connection.server} (${why}): start it, or give its URL with --server or TRIBUTARY_URL`,
      { cause: error },
    );
  }
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text === "" ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!response.ok) {
    const error = (parsed as { error?: { message?: unknown } } | undefined)?.error;
    const why = typeof error?.message === "string"
      ? error.message
      : response.status === 404
      ? `${method} ${RELAY_BASE}${path} is not served there (is the relay among the server's SERVICES?)`
      : response.statusText;
    throw new CliError(
      "ERR_CLI_SERVER",
      `The server at ${connection.server} answered ${response.status}: ${why}`,
    );
  }
  if (parsed === undefined) {
    throw new CliError(
      "ERR_CLI_SERVER",
      `The server at ${connection.server} answered ${response.status} without JSON`,
    );
  }
  return parsed;
}
