# One image for both services. Build stage: install everything and compile; runtime stage: only
# production dependencies, the compiled code and the files it reads at run time.
# Debian slim (glibc), not Alpine: zeromq's and bufferutil's prebuilt addons are built for glibc.
# Node 24, an LTS line (Node 20 reached its end of life in April 2026): .node-version names the
# release CI runs the tests on.

FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Every native dependency ships a prebuilt addon for linux-x64/arm64 inside its package, so no
# install script (and no compiler) is needed; the same holds for the runtime stage below.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY services ./services
COPY scripts ./scripts
RUN npm run build

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
# tc (iproute2) for a shaped link under docker-compose.shaped.yml; the entrypoint uses it only then.
RUN apt-get update && apt-get install -y --no-install-recommends iproute2 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY proto ./proto
COPY assets ./assets
# The receiver writes output.log here; docker-compose.yml bind-mounts ./output over it. It keeps
# the shared secret in /app/auth when AUTH_TOKEN is unset: a new named volume mounted there takes
# this directory's owner, so the node user can write it.
# The same for /app/sockets, the same-host transports' socket files (0700: the receiver refuses a
# directory others can write).
RUN mkdir -p /app/output /app/auth /app/sockets && chown node:node /app/output /app/auth /app/sockets \
  && chmod 0700 /app/sockets
# The entrypoint starts as root only to pick the user: the owner of the service's data directory
# (RUN_AS_OWNER_OF, /app/output unless docker-compose.yml says otherwise), so a bind mount works
# for any host user; see scripts/docker/entrypoint.sh.
COPY scripts/docker/entrypoint.sh /usr/local/bin/itb-entrypoint
ENV RUN_AS_OWNER_OF=/app/output
ENTRYPOINT ["itb-entrypoint"]
CMD ["node", "--no-concurrent-marking", "dist/services/receiver/main.js"]
