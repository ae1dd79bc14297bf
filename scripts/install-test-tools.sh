#!/usr/bin/env bash
# Installs what `npm test` needs besides npm packages, on Debian or Ubuntu (as root, or with sudo):
# redis-server and nats-server (the tests start their own on free ports), docker-compose (the compose file is
# resolved by a real Compose implementation) and chromium (the report is opened in a browser).
# Only what is missing is installed. kubectl (1.27 or later: deploy/k8s is rendered by its
# kustomize) is not in Debian's packages at a version that new: it is only checked for here.
set -euo pipefail
if ! command -v kubectl >/dev/null 2>&1; then
  echo "install-test-tools: kubectl is not on PATH; npm test renders deploy/k8s with it: install kubectl 1.27 or later (https://kubernetes.io/docs/tasks/tools/)" >&2
fi
declare -A package_of=([redis-server]=redis-server [nats-server]=nats-server [docker-compose]=docker-compose [chromium]=chromium)
missing=()
for tool in redis-server nats-server docker-compose chromium; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("${package_of[$tool]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-test-tools: redis-server, nats-server, docker-compose and chromium are already installed"
  exit 0
fi
sudo=()
[ "$(id -u)" = 0 ] || sudo=(sudo)
"${sudo[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
