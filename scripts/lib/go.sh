# shellcheck shell=bash
# scripts/lib/go.sh: sourced (not run) by every script of this repository
# that runs go: scripts/test, junction, setup, release, k8s-tools,
# vulncheck, bench, gen-proto, bench/files/run.sh and .ci/run.
#
# The Go toolchain: pinned in one place, the `toolchain` line of go.mod.
# Sourcing this exports GOTOOLCHAIN=<that version>, so whatever go is on
# PATH (any go 1.21 or later) runs the pinned release, which the go command
# downloads from the Go module proxy (GOPROXY) into the module cache the
# first time (about 76 MB, seconds). The export matters where the
# environment says GOTOOLCHAIN=local (CI, the Docker golang images, some
# machines), where go would otherwise ignore go.mod's toolchain line and
# build with itself. Then checks that `go env GOVERSION` is the pin.
# The Dockerfile (golang:<version>-bookworm), the tools modules
# (tools/*/go.mod, tools/deploy/*/go.mod) and the browser test's module
# (internal/e2e/browser/go.mod) name the same version: check_go_pins
# (scripts/test runs it) fails when one of them differs.
# To move the pin: docs/security.md, "The Go toolchain".
#
# Also defines build_tools, the one way the scripts build pinned Go tools
# into .tools/ (scripts/release, k8s-tools, vulncheck).

junction_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

junction_go_die() {
  echo "${0##*/}: $*" >&2
  exit 1
}

JUNCTION_GO="$(sed -n 's/^toolchain \(go[0-9][^ ]*\)$/\1/p' "$junction_root/go.mod")"
[[ -n $JUNCTION_GO ]] || junction_go_die "go.mod has no toolchain line (toolchain goX.Y.Z): it pins the Go release every script uses"
export GOTOOLCHAIN="$JUNCTION_GO"
command -v go >/dev/null || junction_go_die "go not found on PATH: install any Go 1.21 or later (it fetches $JUNCTION_GO itself), or see Install in README.md"
junction_go_have="$(go env GOVERSION)" ||
  junction_go_die "go could not run $JUNCTION_GO (GOTOOLCHAIN=$JUNCTION_GO, pinned in go.mod): the go command downloads it from the Go module proxy (GOPROXY=$(go env GOPROXY 2>/dev/null)); see the error above"
[[ $junction_go_have == "$JUNCTION_GO" ]] ||
  junction_go_die "go is $junction_go_have with GOTOOLCHAIN=$JUNCTION_GO, want $JUNCTION_GO (pinned in go.mod): is the go on PATH older than Go 1.21?"
unset junction_go_have

# check_go_pins: every other place that names the Go release agrees with
# go.mod's toolchain line: the toolchain lines of the tools modules and of
# internal/e2e/browser (the status page's browser test), and the
# Dockerfile's golang image.
check_go_pins() {
  local f want=${JUNCTION_GO#go} bad=0 img
  for f in "$junction_root"/tools/*/go.mod "$junction_root"/tools/deploy/*/go.mod "$junction_root"/internal/e2e/browser/go.mod; do
    [[ -f $f ]] || continue
    if ! grep -qx "toolchain $JUNCTION_GO" "$f"; then
      echo "${0##*/}: ${f#"$junction_root"/} must say \"toolchain $JUNCTION_GO\" (go.mod's pin)" >&2
      bad=1
    fi
  done
  img="$(sed -n 's/^FROM golang:\([^ ]*\)-bookworm.*/\1/p' "$junction_root/Dockerfile")"
  if [[ $img != "$want" ]]; then
    echo "${0##*/}: Dockerfile builds FROM golang:${img:-?}-bookworm, want golang:$want-bookworm (go.mod's pin)" >&2
    bad=1
  fi
  return "$bad"
}

# build_tools WHAT DEST -- MODDIR PKG... [-- MODDIR PKG...]
#
# Builds the main packages PKG... of each tools module MODDIR (relative
# to the repository root: a module of its own whose go.mod pins the tools,
# so the main go.mod carries none of them) into DEST/bin, with
# CGO_ENABLED=0 -trimpath. Building takes minutes, so it is done once,
# with a stamp (the SHA-256 of the modules' go.mod and go.sum and
# `go version`), and again only when the stamp differs; into a temporary
# folder renamed into place, so an interrupted build leaves nothing half
# done. The caller holds its own lock. WHAT names the tools in messages.
build_tools() {
  local what=$1 dest=$2
  shift 2
  [[ ${1:-} == -- ]] || junction_go_die "build_tools: want WHAT DEST -- MODDIR PKG..."
  local -a mods=() groups=()
  local arg group=""
  for arg in "$@"; do
    if [[ $arg == -- ]]; then
      [[ -n $group ]] && groups+=("$group")
      group=""
    elif [[ -z $group ]]; then
      mods+=("$arg")
      group="$arg"
    else
      group+=" $arg"
    fi
  done
  [[ -n $group ]] && groups+=("$group")
  local want m
  want="$( (for m in "${mods[@]}"; do cat "$junction_root/$m/go.mod" "$junction_root/$m/go.sum"; done; go version) | sha256sum | cut -d' ' -f1)"
  local ok=0 pkg bin base
  if [[ -f $dest/.stamp && "$(cat "$dest/.stamp")" == "$want" ]]; then
    ok=1
    for group in "${groups[@]}"; do
      for pkg in ${group#* }; do
        # go build names a binary after the package's last element, or
        # the one before a major version suffix (goreleaser/v2).
        base=${pkg##*/}
        [[ $base =~ ^v[0-9]+$ ]] && { bin=${pkg%/*}; base=${bin##*/}; }
        [[ -x $dest/bin/$base ]] || ok=0
      done
    done
  fi
  ((ok)) && return 0
  echo "${0##*/}: building $what (pinned in ${mods[*]/%//go.mod}) with $JUNCTION_GO into ${dest#"$junction_root"/}: the first time takes minutes ..." >&2
  local tmp="$dest.tmp.$$" start=$SECONDS
  rm -rf "$dest".tmp.* # left by an interrupted build (the caller's lock is held)
  mkdir -p "$tmp/bin"
  for group in "${groups[@]}"; do
    m=${group%% *}
    # shellcheck disable=SC2086 # the packages, one word each
    if ! (cd "$junction_root/$m" && CGO_ENABLED=0 go build -trimpath -o "$tmp/bin/" ${group#* }); then
      rm -rf "$tmp"
      junction_go_die "building $what failed ($m)"
    fi
  done
  echo "$want" >"$tmp/.stamp"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  echo "${0##*/}: built $what in $((SECONDS - start)) s" >&2
}
