#!/usr/bin/env bash
# bench/sandbox/run.sh: what junction's sandbox costs and what it stops,
# side by side with Anthropic's sandbox-runtime (srt: bubblewrap, seccomp
# and a filtering proxy). Prints Markdown on stdout (progress on stderr):
#
#   1. perf: spawn to ready and per-call latency of the Go echo server
#      (bench/cmd/echoserver) and of server-everything (node), with no
#      sandbox, at level strict and under srt (bench/cmd/sandboxbench perf);
#   2. escapes: internal/e2e's hostile server (internal/e2e/testdata/hostile)
#      with no sandbox, at level strict and under srt, every attempt of
#      TestSandboxEscapes, which each one stopped (sandboxbench escapes).
#
# srt is installed with npm (the project's Node 22, .tools/node) into
# SANDBOX_SRT_DIR (default /tmp/junction-srt), never into the project;
# on Linux it needs bubblewrap, socat and ripgrep: run as root with
# apt-get, this installs them (Debian packages bubblewrap, socat, ripgrep),
# otherwise it says what is missing and measures without srt.
#
# Environment: SANDBOX_SPAWNS (default 20), SANDBOX_CALLS (default 5000),
# SANDBOX_SKIP_SRT=1 (junction only), SANDBOX_SRT_VERSION (default 0.0.83),
# SANDBOX_ONLY=perf|escapes.
# Linux only; level strict needs what `junction sandbox check` reports.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source "$root/scripts/lib/go.sh"
SPAWNS=${SANDBOX_SPAWNS:-20}
CALLS=${SANDBOX_CALLS:-5000}
ONLY=${SANDBOX_ONLY:-}
SRT_DIR=${SANDBOX_SRT_DIR:-/tmp/junction-srt}
SRT_VERSION=${SANDBOX_SRT_VERSION:-0.0.83}
say() { echo "sandbox: $*" >&2; }

work=$(mktemp -d /tmp/junction-sandbox-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
# Each server in a directory of its own: a sandbox may read its binary's.
mkdir -p "$work/echo" "$work/hostile"
say "building sandboxbench, echoserver, hostile ..."
export CGO_ENABLED=0
go build -trimpath -ldflags "-s -w" -o "$work/sandboxbench" ./bench/cmd/sandboxbench
go build -trimpath -ldflags "-s -w" -o "$work/echo/echoserver" ./bench/cmd/echoserver
go build -trimpath -ldflags "-s -w" -o "$work/hostile/hostile" ./internal/e2e/testdata/hostile

node=$root/.tools/node/bin/node
everything=$root/.tools/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js
everything_args=()
if [[ -x $node && -f $everything ]]; then
  everything_args=(-node "$node" -everything "$everything")
else
  say "no .tools/node or server-everything (run scripts/setup): the Go echo server only"
fi

srt_args=()
if [[ ${SANDBOX_SKIP_SRT:-} != 1 ]]; then
  missing=()
  for tool in bwrap socat rg; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  if ((${#missing[@]})) && [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
    say "installing bubblewrap socat ripgrep (apt-get) ..."
    apt-get update -qq >&2 && apt-get install -y -qq bubblewrap socat ripgrep >&2
    missing=()
    for tool in bwrap socat rg; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  fi
  srt=$SRT_DIR/node_modules/.bin/srt
  if ((${#missing[@]})); then
    say "srt needs ${missing[*]} (Debian: bubblewrap socat ripgrep): measuring without srt"
  elif [[ ! -x $node ]]; then
    say "no .tools/node (run scripts/setup): measuring without srt"
  else
    if [[ ! -x $srt ]]; then
      say "installing @anthropic-ai/sandbox-runtime@$SRT_VERSION into $SRT_DIR ..."
      mkdir -p "$SRT_DIR"
      (cd "$SRT_DIR" && [[ -f package.json ]] || echo '{"private":true}' >package.json)
      (cd "$SRT_DIR" && PATH="$(dirname "$node"):$PATH" timeout 300 npm install --no-audit --no-fund --no-progress \
        "@anthropic-ai/sandbox-runtime@$SRT_VERSION" >&2)
    fi
    if PATH="$(dirname "$node"):$PATH" timeout 60 "$srt" --version >/dev/null 2>&1; then
      srt_args=(-srt "$srt")
    else
      say "srt does not run here ($srt --version failed): measuring without srt"
    fi
  fi
fi

# srt is a node script: its node is the project's.
export PATH="$(dirname "$node"):$PATH"
echo "## Sandbox: cost and escapes ($(date -u +%Y-%m-%d), $(uname -sr), $(nproc) CPUs, uid $(id -u))"
echo
if [[ $ONLY != escapes ]]; then
  say "perf: $SPAWNS spawns and $CALLS calls per server and mode ..."
  timeout 900 "$work/sandboxbench" perf -echo "$work/echo/echoserver" "${everything_args[@]}" "${srt_args[@]}" \
    -spawns "$SPAWNS" -calls "$CALLS"
  echo
fi
if [[ $ONLY != perf ]]; then
  say "escapes: the hostile server under each sandbox ..."
  echo "### Escape attempts (internal/e2e/testdata/hostile)"
  echo
  timeout 900 "$work/sandboxbench" escapes -hostile "$work/hostile/hostile" "${srt_args[@]}"
fi
