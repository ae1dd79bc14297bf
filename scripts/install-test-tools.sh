#!/usr/bin/env bash
# Installs the programs `npm test` starts besides npm packages, on Debian or Ubuntu (as root, or
# with sudo): redis-server, nats-server, mosquitto and rabbitmq-server (the tests start their own
# on free ports, nothing kept on disk; where systemd runs, installing the last two also starts the
# machine's own, which no test uses), docker-compose
# (the compose file is resolved by a real Compose implementation), chromium (the report is opened in
# a browser), iproute2 (ip and tc: the shaped-link tests), procps (pgrep), prometheus (promtool: the
# receiver's GET /metrics is checked by `promtool check metrics`), and util-linux and mount (unshare,
# setpriv, mount: the cross-host and token-file tests), which most images already have.
# Debian has promtool only in the prometheus package: where systemd runs, it also starts a Prometheus
# server on :9090 (`systemctl disable --now prometheus` stops it; the tests need only promtool).
# Only what is missing is installed. What no package gives is named, with the checks it leaves out.
set -euo pipefail

# Each program and its package. ip and tc live in /usr/sbin, off an ordinary user's PATH.
declare -A package_of=([redis-server]=redis-server [nats-server]=nats-server [mosquitto]=mosquitto
  [rabbitmq-server]=rabbitmq-server [docker-compose]=docker-compose
  [chromium]=chromium [ip]=iproute2 [tc]=iproute2 [pgrep]=procps [promtool]=prometheus [unshare]=util-linux
  [setpriv]=util-linux [mount]=mount)
have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]; }

missing=()
for tool in redis-server nats-server mosquitto rabbitmq-server docker-compose chromium ip tc pgrep promtool unshare setpriv mount; do
  package=${package_of[$tool]}
  if ! have "$tool" && [[ " ${missing[*]} " != *" $package "* ]]; then missing+=("$package"); fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-test-tools: every program npm test uses is installed"
else
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update
  # Through env, as sudo drops the caller's environment: debconf must not ask on a terminal.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}"
fi

# kubectl 1.27 or later (deploy/k8s is rendered by its kustomize) is not in Debian's packages at a
# version that new: npm test does not need it; .ci/run does.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "install-test-tools: kubectl is not on PATH and no Debian package has one new enough; npm test does not need it." \
    "Only .ci/run's check of deploy/k8s rendered by kustomize (npx vitest run --project k8s) does: install kubectl 1.27 or later (https://kubernetes.io/docs/tasks/tools/) to run it" >&2
fi
# No package gives a privilege: without root, or in a container without CAP_NET_ADMIN/CAP_SYS_ADMIN or
# user namespaces, npm test skips the checks that need them and lists them at its end.
