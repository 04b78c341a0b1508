#!/usr/bin/env bash
# bench/files/run.sh: push/pull throughput and peak client RSS of
# "junction push"/"junction pull" against plain curl, on the same
# "junction files serve" listener on 127.0.0.1, for 1 MiB, 100 MiB and
# 1 GiB files. Also reports the listener's own peak RSS.
#
# Usage: bash bench/files/run.sh [sizes in MiB...]   (default: 1 100 1024)
# Needs: go, curl, GNU time (/usr/bin/time). Writes only under a temp dir.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# The pinned Go (go.mod's toolchain line; GOTOOLCHAIN).
source "$root/scripts/lib/go.sh"
sizes=("$@")
[[ ${#sizes[@]} -gt 0 ]] || sizes=(1 100 1024)
work="$(mktemp -d)"
trap 'kill "$srv_pid" 2>/dev/null || true; wait "$srv_pid" 2>/dev/null || true; rm -rf "$work"' EXIT

bin="$work/junction"
(cd "$root" && go build -o "$bin" ./cmd/junction)
mkdir -p "$work/root" "$work/out"
"$bin" files serve -fileroot "$work/root" -max-body -1 127.0.0.1:0 2>"$work/serve.log" &
srv_pid=$!
for _ in $(seq 100); do
  grep -q 'listening on' "$work/serve.log" && break
  sleep 0.05
done
addr="$(grep -o 'http://[0-9.:]*' "$work/serve.log" | head -1 | sed 's#http://##')"
[[ -n $addr ]] || { cat "$work/serve.log"; exit 1; }

# measure NAME BYTES CMD...: prints one table row (MB/s, seconds, peak RSS).
measure() {
  local name=$1 bytes=$2
  shift 2
  /usr/bin/time -f '%e %M' -o "$work/time" "$@" >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
  read -r secs rss <"$work/time"
  awk -v n="$name" -v b="$bytes" -v s="$secs" -v r="$rss" \
    'BEGIN { if (s < 0.01) s = 0.01; printf "| %-22s | %10.1f | %8.2f | %9.1f |\n", n, b / 1048576 / s, s, r / 1024 }'
}

echo "listener: $addr ($(go version | cut -d' ' -f3), $(nproc) CPUs)"
echo
echo "| case                   |       MB/s |  seconds | peak RSS MiB |"
echo "|------------------------|-----------:|---------:|----------:|"
for mib in "${sizes[@]}"; do
  f="$work/src-$mib"
  head -c "$((mib * 1048576))" /dev/urandom >"$f"
  bytes=$((mib * 1048576))
  measure "junction push ${mib}M" "$bytes" "$bin" push "$f" "$addr:j-$mib"
  measure "curl push ${mib}M" "$bytes" curl -sS -f -T "$f" "http://$addr/c-$mib"
  measure "junction pull ${mib}M" "$bytes" "$bin" pull "$addr:j-$mib" "$work/out/j-$mib"
  measure "curl pull ${mib}M" "$bytes" curl -sS -f -o "$work/out/c-$mib" "http://$addr/c-$mib"
  cmp -s "$f" "$work/out/j-$mib" || { echo "junction round trip differs for $mib MiB"; exit 1; }
  cmp -s "$f" "$work/out/c-$mib" || { echo "curl round trip differs for $mib MiB"; exit 1; }
  rm -f "$f" "$work/out/"* "$work/root/"*
done
echo
echo "listener peak RSS: $(awk '/VmHWM/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$srv_pid/status")"
