#!/bin/sh
# The image's entrypoint: starts a service as the user who owns its data directory
# (RUN_AS_OWNER_OF), so that `docker compose up` on a fresh clone needs no mkdir or chmod for any
# host user, and the files it writes belong to the user who ran it:
# - a directory the host user made (e.g. ./output, before or by an earlier run) keeps its owner,
#   and the service runs as that uid and gid;
# - a directory Docker made for a missing bind-mount source is root's: it is handed to the image's
#   node user (uid 1000) and the service runs as node.
# ALSO_OWN lists directories inside the container (the secret's and the sockets' volumes) handed to the same user.
# Without RUN_AS_OWNER_OF, or when started as another user than root, the command runs as it is.
# With NETWORK_RATE, NETWORK_DELAY or NETWORK_LOSS (docker-compose.shaped.yml, which adds
# NET_ADMIN), tc first shapes this container's egress, as root, and the service learns what was
# applied through ITB_LINK; a container that cannot shape exits 2 with the reason.
set -eu
if [ -n "${NETWORK_RATE:-}${NETWORK_DELAY:-}${NETWORK_LOSS:-}" ]; then
  ITB_LINK=$(node /app/dist/scripts/shape-container.js) || exit 2
  export ITB_LINK
fi
dir=${RUN_AS_OWNER_OF:-}
if [ -z "$dir" ] || [ "$(id -u)" != 0 ]; then exec "$@"; fi
mkdir -p "$dir" 2>/dev/null || true
uid=$(stat -c %u "$dir" 2>/dev/null || echo 0)
gid=$(stat -c %g "$dir" 2>/dev/null || echo 0)
if [ "$uid" = 0 ]; then
  chown node:node "$dir" 2>/dev/null || true
  uid=$(id -u node)
  gid=$(id -g node)
fi
for extra in ${ALSO_OWN:-}; do chown "$uid:$gid" "$extra" 2>/dev/null || true; done
exec setpriv --reuid="$uid" --regid="$gid" --clear-groups -- "$@"
