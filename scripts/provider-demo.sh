#!/usr/bin/env bash
# The provider operations end to end against `headroom sim` on 127.0.0.1, on GitHub and then on
# GitLab (the simulator serves GitLab's REST v4 under /api/v4 on the same port): create a
# repository, a branch, commit two files in one commit, protect the default branch, open and
# merge a pull (merge) request, list the branches. Exits non-zero on the first failure.
# Runs the binary HEADROOM_BIN names; without it, builds one (debug) first and says so.
set -euo pipefail
bin=${HEADROOM_BIN:+$(realpath "$HEADROOM_BIN")}
cd "$(dirname "$0")/.."
if [ -z "$bin" ]; then
  echo "building headroom (debug, cargo build --bin headroom); set HEADROOM_BIN to use another" >&2
  cargo build --quiet --bin headroom
  bin=$PWD/target/debug/headroom
fi
echo "using $bin" >&2
work=$(mktemp -d)
sim_pid=
trap '[ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
"$bin" sim --addr 127.0.0.1:0 --token demo-token=alice > sim.out &
sim_pid=$!
for _ in $(seq 100); do [ -s sim.out ] && break; sleep 0.1; done
url=$(sed -n 's/^listening on //p' sim.out)
[ -n "$url" ] || { echo "the simulator did not start" >&2; exit 1; }

mkdir -p files/docs files/bin
printf '# Hello\n\nWritten by headroom op.\n' > files/docs/hello.md
printf '#!/bin/sh\necho hello\n' > files/bin/hello.sh
chmod +x files/bin/hello.sh

# `headroom op … --json` prints {"ok":true,"result":…}; this prints one field of the result.
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)["result"][sys.argv[1]])' "$1"; }

demo() {
  local provider=$1 api=$2
  local op=("$bin" op --provider "$provider" --api-url "$api" --db "$work/$provider.db" --json)
  echo "== $provider ($api)"
  "${op[@]}" create-repo demo --description "headroom op demo"
  "${op[@]}" create-branch alice/demo feature --from main
  (cd files && "${op[@]}" commit-files alice/demo --branch feature \
    --message "Add a greeting and its script" docs/hello.md bin/hello.sh)
  "${op[@]}" protect-branch alice/demo main
  number=$("${op[@]}" open-pr alice/demo --head feature --base main --title "Add hello" | field number)
  "${op[@]}" merge-pr alice/demo "$number"
  "${op[@]}" list-branches alice/demo
}

GITHUB_TOKEN=demo-token demo github "$url"
GITLAB_TOKEN=demo-token demo gitlab "$url/api/v4"
echo "provider demo: done on GitHub and GitLab"
