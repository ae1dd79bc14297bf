#!/usr/bin/env bash
# The README's test commands, to the letter, on a machine with nothing else installed: a fresh,
# unprivileged container from the Docker image's base (the Dockerfile's first FROM, Node 24, the one
# line package.json's engines accept), given a fresh clone of HEAD, run as the image's `node` user
# (uid 1000) with sudo without a password (installed first: that is what "a machine where the user
# has sudo" means), from a clone that user owns. This is CI's one full run of `npm test`; what a
# container cannot give (root, network namespaces and tc, a user namespace) is skipped here and run
# on the host by .ci/run (vitest project `privileged`).
# The commands are read from the README's fenced block that holds `npm test`, so a README that
# names the wrong commands, or a missing install step, turns CI red. `a && b` runs as two timed
# steps that stop at the first failure, as `&&` does. One closing line; exit 1 when a command fails.
# With FRESH_COUNTS_FILE set, the counts (passed failed skipped) are also written there, one line.
# Needs a Docker engine, git and node; where Docker Hub is unreachable, the base images come from
# scripts/docker/stand-in-images.sh. .ci/run runs it; `npm test` does not.
set -euo pipefail
cd "$(dirname "$0")/.."

# One README command's bound (npm test takes about 6 minutes on 2 cores, the install a few).
STEP_TIMEOUT_S=1500
# The container's own lifetime (its main process is `sleep`): nothing it runs outlives this.
CONTAINER_LIFETIME_S=3600

say() { printf 'fresh-machine-check: %s\n' "$*"; }

# The README's test block: the first fenced block with a line that is exactly `npm test`.
mapfile -t readme_lines < <(awk '
  /^```/ { if (open) { if (has_test) { printf "%s", block; exit } open = 0 } else { open = 1; block = ""; has_test = 0 } next }
  open { block = block $0 "\n"; if ($0 == "npm test") has_test = 1 }
' README.md)
if [ ${#readme_lines[@]} -eq 0 ]; then
  say "README.md has no fenced block with the line \`npm test\`: nothing to check"
  exit 1
fi
steps=()
for line in "${readme_lines[@]}"; do
  while [[ $line == *' && '* ]]; do steps+=("${line%% && *}"); line=${line#* && }; done
  steps+=("$line")
done
say "the README's test commands: $(printf '[%s] ' "${steps[@]}")"

base_image=$(awk '$1 == "FROM" { print $2; exit }' Dockerfile)
image_major=$(cut -d. -f1 .node-version)
if [[ $base_image != "node:$image_major-"* ]]; then
  say "cannot tell the image: Dockerfile's base is '$base_image', .node-version's line $image_major"
  exit 1
fi

# An image present is used as is; else Docker Hub's; else a stand-in.
ensure_image() {
  local image=$1
  docker image inspect "$image" >/dev/null 2>&1 && return 0
  timeout 300 docker pull -q "$image" >/dev/null 2>&1 && return 0
  say "$image: not on this machine and Docker Hub does not answer: building a stand-in"
  bash scripts/docker/stand-in-images.sh
}

work=$(mktemp -d)
containers=()
cleanup() {
  [ ${#containers[@]} -eq 0 ] || docker rm -f "${containers[@]}" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# A fresh clone of HEAD: no node_modules, no dist, no output of this checkout's. Root owns the
# archive's files: extracted by root they stay root's, by the user they become the user's, as the
# clone each would have made (a bind mount would keep this machine's owners).
git clone -q "$PWD" "$work/clone"
tar -C "$work/clone" --owner=0 --group=0 --numeric-owner -cf "$work/clone.tar" .

results=()
# run_case LABEL IMAGE USER HOME: one fresh container, the README's commands as USER from a clone
# in HOME that USER owns (extracted by USER), one closing line. Returns 1 when a command fails.
run_case() {
  local label=$1 image=$2 user=$3 home=$4
  local name="itb-fresh-$$-${#containers[@]}" dir="$home/image-transfer-bench"
  containers+=("$name")
  say "$label: container $name from $image"
  docker run -d --name "$name" "$image" sleep "$CONTAINER_LIFETIME_S" >/dev/null
  if [ "$user" != root ]; then
    # The machine: sudo for that user, no password (as on a machine where they administer).
    docker exec "$name" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends sudo >/dev/null \
      && echo '$user ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/$user && chmod 0440 /etc/sudoers.d/$user"
  fi
  docker exec -i -u "$user" "$name" sh -c "mkdir -p '$dir' && tar -x -C '$dir'" <"$work/clone.tar"
  local node_version timings=() status=0 step_status start log="$work/$name.log" outcome=""
  node_version=$(docker exec "$name" node --version)
  for step in "${steps[@]}"; do
    say "$label: \$ $step"
    start=$(date +%s)
    step_status=0
    timeout --kill-after=30 "$STEP_TIMEOUT_S" docker exec -u "$user" -w "$dir" -e HOME="$home" "$name" bash -c "$step" 2>&1 | tee "$log" || step_status=$?
    timings+=("$step $(($(date +%s) - start)) s")
    if [ "$step_status" -ne 0 ]; then
      status=1
      [ "$step_status" -eq 124 ] && outcome="'$step' took more than $STEP_TIMEOUT_S s" || outcome="'$step' exited $step_status"
      break
    fi
  done
  # vitest's summary ("Tests  2 failed | 318 passed | 4 skipped (324)"), when npm test got that far.
  local summary count passed=0 failed=0 skipped=0
  summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^ *Tests +[0-9]' | tail -1 || true)
  for count in $(grep -oE '[0-9]+ (passed|failed|skipped|todo)' <<<"$summary" | tr ' ' ':'); do
    case ${count#*:} in
      passed) passed=${count%%:*} ;;
      failed) failed=${count%%:*} ;;
      *) skipped=$((skipped + ${count%%:*})) ;;
    esac
  done
  local timing_text=${timings[0]}
  for step in "${timings[@]:1}"; do timing_text+=", $step"; done
  say "$label on Node ${node_version#v}: $timing_text"
  if [ -n "$summary" ]; then
    results+=("$label on Node ${node_version#v}: $passed passed, $failed failed, $skipped skipped${outcome:+ ($outcome)}")
    [ -z "${FRESH_COUNTS_FILE:-}" ] || echo "$passed $failed $skipped" >"$FRESH_COUNTS_FILE"
  else
    results+=("$label on Node ${node_version#v}: no test ran (${outcome:-no vitest summary})")
  fi
  docker rm -f "$name" >/dev/null 2>&1 || true
  return "$status"
}

status=0
ensure_image "$base_image"
run_case "node user with sudo" "$base_image" node /home/node || status=1
for result in "${results[@]}"; do say "$result"; done
exit "$status"
