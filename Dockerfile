# The server as an image. Node 24 (LTS) runs the TypeScript sources as they are, with its own
# type stripping (the README's `node server.ts` for Node 24), so the image holds neither tsx nor a
# build: `npm run build`'s dist/ is the library for other programs, without server.ts.
#
#   docker build -t tributary .
#   docker run --rm -p 8000:8000 tributary
#
# compose.yaml adds PostgreSQL, Redis and (profile kafka) a Kafka broker. CI has no registry and no
# Docker engine: test/container/dockerfile.test.ts replays these steps without them.

# The clients of PostgreSQL, Redis and Kafka: optional peer dependencies of the package (dev
# dependencies of this checkout), loaded only when DATABASE_URL or STORAGE_TYPE chooses them. Made
# plain dependencies here and installed at the lockfile's versions, with nothing else.
FROM node:24-bookworm-slim AS clients
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm pkg delete devDependencies peerDependenciesMeta \
  && npm install --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-bookworm-slim
# Listen on every interface of the container; the other defaults are the server's own.
ENV HOST=0.0.0.0
WORKDIR /app
COPY --from=clients /app/node_modules ./node_modules
COPY package.json server.ts ./
COPY lib ./lib
# The admin command line: `docker compose exec tributary node bin/tributary.mjs ...` (run on the sources, as the server is).
COPY bin ./bin
# The demo data, keys, clients and tenants the defaults name; mount your own over them (or point
# DATA_DIR, API_KEYS_FILE, CLIENTS_FILE and TENANTS_FILE elsewhere).
COPY data/datasets ./data/datasets
COPY data/api_keys.json data/clients.json data/tenants.json ./data/
# STATE_DIR (var) is the one folder the server writes; everything else stays root's. The user is
# the base image's `node`, by number so that Kubernetes' runAsNonRoot can verify it.
RUN mkdir var && chown 1000:1000 var
USER 1000:1000
EXPOSE 8000
CMD ["node", "server.ts"]
