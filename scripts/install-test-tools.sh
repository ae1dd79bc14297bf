#!/usr/bin/env bash
# Installs what `npm test` needs besides npm packages, on Debian or Ubuntu (as root, or with sudo):
# redis-server and nats-server (the tests start their own on free ports), docker-compose (the compose file is
# resolved by a real Compose implementation) and chromium (the report is opened in a browser).
# Only what is missing is installed.
set -euo pipefail
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
