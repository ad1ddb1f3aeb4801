# The server as a container, listening on 5000 (the webhook inspector's reference deployment).
# Without DATABASE_URL it runs on embedded PostgreSQL (PGlite) in /app/data — mount a volume there to
# keep data; with DATABASE_URL=postgres://… it uses that server (compose.yaml runs both).
# test/runtime/dockerfile.test.ts lints this file and runs its ENTRYPOINT and CMD against a built dist/ with SIGTERM;
# `npm run test:image` builds it with podman and runs the image itself (docs/deploying.md, Container).

# Build stage: every dependency (swc, tsx, buf…) as locked, then `npm run build` → dist/.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are copied; the build runs below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
# Source maps stay out of the image (they are for debugging a checkout, not for serving).
RUN npm run build && find dist -name '*.map' -type f -delete
# The browser pages' large files are served from the gzip'd copies the build writes beside them
# (src/server/vendored.ts decompresses one for the rare client that does not accept gzip): only those ship.
RUN find dist/vendor -name '*.gz' -type f -exec sh -c 'for gz; do rm -- "${gz%.gz}"; done' sh {} +
# The build bundles every package the server, `migrate` and `sandbox` import (scripts/build.mjs) except
# the few that must stay files: PGlite (its wasm and data), @node-rs/argon2 (native) and yaml (read only
# when a contract changed after the build), listed at their locked versions in dist/runtime/package.json.
# Those alone are installed for the runtime stage, then stripped of what no production process reads:
# source maps, type declarations, TypeScript sources and markdown, the packages' own tests and examples,
# PGlite's extension archives (the server loads no extension) and its CommonJS builds other than the
# entry knex-pglite and a new data directory's initdb child require (src/store/pglite-init.ts), and
# yaml's browser build (Node loads its `node` export, dist/).
WORKDIR /runtime
RUN cp /app/dist/runtime/package.json . \
 && npm install --omit=dev --ignore-scripts --no-package-lock --no-audit --no-fund \
 && find node_modules -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' -o -name '*.md' -o -name '*.markdown' \) -delete \
 && find node_modules -type d \( -name test -o -name tests -o -name __tests__ -o -name example -o -name examples \) -prune -exec rm -rf {} + \
 && find node_modules/@electric-sql/pglite/dist -name '*.cjs' ! -path '*/dist/index.cjs' -delete \
 && rm -rf node_modules/@electric-sql/pglite/dist/*.tar.gz node_modules/yaml/browser

# Runtime stage: the bundled server and the packages it keeps external (above), the contracts it reads at run time.
FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    PORT=5000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/data
WORKDIR /app
COPY package.json ./
COPY --from=build /runtime/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/dist/generated ./dist/generated
# The files the browser pages serve from build-time packages (gzip'd), and markdown-it bundled (src/server/vendored.ts).
COPY --from=build /app/dist/vendor ./dist/vendor
# The OpenAPI documents pre-parsed and validated by the build (read at start instead of the YAML).
COPY --from=build /app/dist/prebuilt ./dist/prebuilt
# The migrated PGlite template a new embedded database starts from (src/store/pglite-template.ts).
COPY --from=build /app/dist/pglite-template.tar.gz /app/dist/pglite-template.json ./dist/
COPY contracts ./contracts
COPY docs ./docs
COPY bin ./bin
# The image's own unprivileged user (uid 1000) owns the data directory; nothing else is writable.
RUN mkdir -p /app/data && chown node:node /app/data
USER node
EXPOSE 5000
VOLUME ["/app/data"]
# Ready = the database answers (GET /readyz); node itself, so the slim image needs no curl. With
# TLS_CERT the server speaks only TLS: the probe does too, to itself on loopback, where the
# certificate's name (not 127.0.0.1) is not what it checks.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "require(process.env.TLS_CERT ? 'node:https' : 'node:http').get({ host: '127.0.0.1', port: process.env.PORT || 5000, path: '/readyz', rejectUnauthorized: false, timeout: 2500 }, (r) => process.exit(r.statusCode === 200 ? 0 : 1)).on('error', () => process.exit(1)).on('timeout', () => process.exit(1))"]
# Exec form, node itself as PID 1: `docker stop`'s SIGTERM reaches the server's handler, which drains
# in-flight requests for up to SHUTDOWN_GRACE_MS (10 s; docker's default stop timeout is also 10 s —
# raise it with `--stop-timeout`/`stop_grace_period` if you raise the grace). No `npm start` here:
# npm would be PID 1 and the server's shutdown would not be awaited. bin/cfs-server.js runs the
# command in its own process: `docker run IMAGE` serves (`start`), `docker run IMAGE migrate` runs the
# migrations and exits (a Kubernetes Job or init container; docs/operations.md, Migrations).
ENTRYPOINT ["node", "bin/cfs-server.js"]
CMD ["start"]
