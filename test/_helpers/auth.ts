import {
  createAuthService,
  LoginThrottle,
  MemoryAuthStore,
  parseClients,
  TokenService,
  type UserRecord,
} from "../../lib/auth/mod.ts";
import type { Handler } from "../../lib/http/mod.ts";

/** A low scrypt cost, so tests stay fast; the default is 16384. */
export const TEST_COST = 1024;

/** Test clients: a confidential backend, a public app, and one whose id needs form-url-encoding. */
export const CLIENTS = parseClients([
  {
    client_id: "backend",
    client_secret: "backend-secret",
    grant_types: ["client_credentials"],
    scopes: ["SignUp"],
  },
  { client_id: "app", grant_types: ["password", "refresh_token"], scopes: ["UserActivity"] },
  {
    client_id: "resource",
    client_secret: "resource-secret",
    grant_types: ["client_credentials"],
    scopes: ["SignUp"],
    permissions: ["introspect"],
  },
  {
    client_id: "odd_client-id.1",
    client_secret: "s3cr3t:with spaces+plus&amp",
    grant_types: ["client_credentials", "password", "refresh_token"],
    scopes: ["SignUp", "UserActivity"],
  },
]);

/** A deterministic source of "random" bytes. */
export function counterRandom(seed = 1): (size: number) => Uint8Array {
  let n = seed;
  return (size) => {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) {
      n = (Math.imul(n, 1103515245) + 12345) >>> 0;
      bytes[i] = n >>> 24;
    }
    return bytes;
  };
}

/** Everything an auth test needs, with a clock it controls. */
export interface AuthFixture {
  readonly store: MemoryAuthStore;
  readonly tokens: TokenService;
  readonly handler: Handler;
  readonly users: UserRecord[];
  /** Moves the clock. */
  advance(ms: number): void;
  /** Registers a user directly, returning it. */
  addUser(username: string, password: string): Promise<UserRecord>;
}

/** Builds a token service and the auth routes over a memory store. */
export function authFixture(
  options: {
    maxPerUser?: number;
    accessTtlSeconds?: number;
    refreshReuseIntervalSeconds?: number;
  } = {},
): AuthFixture {
  let t = Date.UTC(2026, 0, 1);
  const now = (): number => t;
  const store = new MemoryAuthStore();
  const tokens = new TokenService({
    store,
    clients: CLIENTS,
    now,
    random: counterRandom(),
    throttle: new LoginThrottle({ now, maxPerUser: options.maxPerUser ?? 5 }),
    accessTtlSeconds: options.accessTtlSeconds ?? 3600,
    ...(options.refreshReuseIntervalSeconds === undefined
      ? {}
      : { refreshReuseIntervalSeconds: options.refreshReuseIntervalSeconds }),
    passwordCost: TEST_COST,
  });
  const users: UserRecord[] = [];
  const handler = createAuthService(tokens, { onUserCreated: (user) => void users.push(user) });
  return {
    store,
    tokens,
    handler,
    users,
    advance: (ms) => {
      t += ms;
    },
    addUser: async (username, password) => {
      const user = await tokens.createUser({ username, password, notifyLanguage: null });
      if (user === undefined) throw new Error(`user ${username} exists`);
      return user;
    },
  };
}

/** Form-url-encodes parameters the way OAuth clients do. */
export function form(params: Readonly<Record<string, string>>): string {
  return new URLSearchParams(params).toString();
}

/** An HTTP Basic header for a client, form-url-encoding both halves (RFC 6749 Appendix B). */
export function basic(id: string, secret: string): string {
  const encode = (text: string): string =>
    encodeURIComponent(text).replace(/%20/g, "+").replace(
      /[!'()*~]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    );
  return `Basic ${btoa(`${encode(id)}:${encode(secret)}`)}`;
}
