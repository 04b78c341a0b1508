# shellcheck shell=bash
# scripts/lib/debian.sh: sourced (not run) by the scripts that install
# Debian packages for what they drive for real: scripts/setup (the
# browsers, databases and shells the tests run) and scripts/bench
# (valgrind, which counts the instructions of a call).
#
# debian_install LOG PACKAGE...: installs the packages with apt-get, as
# root, without a terminal; when apt-get's lists are stale, it updates
# them and tries once more. apt-get's output goes to LOG. Returns 1 with
# a line on stderr saying what to do when it cannot: no apt-get, not
# root, or the install failed (then LOG is printed first).
debian_install() {
  local log="$1"
  shift
  if ! command -v apt-get >/dev/null || [[ $(id -u) != 0 ]]; then
    echo "missing Debian packages: $*; install them (apt-get install $*) as root, then rerun" >&2
    return 1
  fi
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null >"$log" 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >>"$log" 2>&1 || true
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" </dev/null >>"$log" 2>&1; then
      cat "$log" >&2
      echo "apt-get install $* failed (log above)" >&2
      return 1
    fi
  fi
}
