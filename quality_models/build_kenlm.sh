#!/usr/bin/env bash
# Build KenLM's estimation tools (lmplz, build_binary) from the source shipped in the PyPI kenlm sdist.
#
# The kenlm Python package only queries models; training one needs these two programs. The result lands
# in build/kenlm/bin/ (relative to the repository root). Cached: nothing happens when both exist.
#
#   quality_models/build_kenlm.sh          (usually through `make kenlm`)
#
# Environment: PIP (default .venv/bin/pip), KENLM_VERSION (default 0.3.0), JOBS (default 2).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

KENLM_VERSION="${KENLM_VERSION:-0.3.0}"
JOBS="${JOBS:-2}"
PIP="${PIP:-.venv/bin/pip}"
OUT=build/kenlm
BIN="$OUT/bin"

die() { echo "build_kenlm: error: $*" >&2; exit 1; }

if [[ -x "$BIN/lmplz" && -x "$BIN/build_binary" ]]; then
  echo "build_kenlm: $BIN/lmplz and $BIN/build_binary already built (delete $OUT to rebuild)"
  exit 0
fi

start=$(date +%s)

# --- system packages -------------------------------------------------------------------------------
DEB_PACKAGES=(libboost-program-options-dev libboost-system-dev libboost-thread-dev libboost-test-dev
              zlib1g-dev libbz2-dev liblzma-dev cmake g++ make)
missing=()
for p in "${DEB_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    die "needs dpkg/apt-get (Debian or Ubuntu) to install: ${missing[*]}
  on another system install Boost (program_options, system, thread, test), zlib, bzip2, lzma dev
  headers, cmake and a C++ compiler, then build kenlm's lmplz and build_binary into $BIN"
  fi
  if [[ $(id -u) -ne 0 ]]; then
    die "missing system packages: ${missing[*]}
  install them as root:  sudo apt-get update && sudo apt-get install -y ${missing[*]}"
  fi
  echo "build_kenlm: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || die "apt-get update failed"
  apt-get install -y -qq --no-install-recommends "${missing[@]}" || die "apt-get install failed: ${missing[*]}"
fi

# --- source ----------------------------------------------------------------------------------------
[[ -x "$PIP" ]] || die "$PIP not found: run \`make setup\` first (or set PIP=/path/to/pip)"
mkdir -p "$OUT/src"
sdist=$(ls "$OUT/src"/kenlm-"$KENLM_VERSION".tar.gz 2>/dev/null || true)
if [[ -z "$sdist" ]]; then
  echo "build_kenlm: downloading the kenlm==$KENLM_VERSION sdist"
  # Build isolation made this download hang (it tries to set up a build environment): keep it off.
  "$PIP" download --quiet --no-deps --no-binary :all: --no-build-isolation "kenlm==$KENLM_VERSION" \
    -d "$OUT/src" || die "pip download kenlm==$KENLM_VERSION failed"
  sdist=$(ls "$OUT/src"/kenlm-"$KENLM_VERSION".tar.gz 2>/dev/null || true)
  [[ -n "$sdist" ]] || die "pip download did not produce $OUT/src/kenlm-$KENLM_VERSION.tar.gz"
fi
srcdir="$OUT/src/kenlm-$KENLM_VERSION"
rm -rf "$srcdir"
tar -xzf "$sdist" -C "$OUT/src" || die "cannot unpack $sdist"
[[ -f "$srcdir/CMakeLists.txt" && -d "$srcdir/lm/builder" ]] \
  || die "$sdist does not hold the KenLM source tree (no CMakeLists.txt or lm/builder)"

# --- build -----------------------------------------------------------------------------------------
builddir="$OUT/cmake-build"
rm -rf "$builddir"
cmake -S "$srcdir" -B "$builddir" -DCMAKE_BUILD_TYPE=Release -DCOMPILE_TESTS=OFF >"$OUT/cmake.log" 2>&1 \
  || { tail -30 "$OUT/cmake.log" >&2; die "cmake configure failed (full log: $OUT/cmake.log)"; }
cmake --build "$builddir" --target lmplz build_binary -j "$JOBS" >"$OUT/make.log" 2>&1 \
  || { tail -30 "$OUT/make.log" >&2; die "compiling lmplz/build_binary failed (full log: $OUT/make.log)"; }

mkdir -p "$BIN"
for tool in lmplz build_binary; do
  found=$(find "$builddir" -type f -name "$tool" -perm -u+x | head -1)
  [[ -n "$found" ]] || die "$tool was not produced by the build (see $OUT/make.log)"
  cp "$found" "$BIN/$tool"
done
# Smoke test: both load their shared libraries (`--help` exits 1 by design, so look at the text).
for tool in lmplz build_binary; do
  help=$("$BIN/$tool" --help 2>&1 || true)
  [[ $help == *[Uu]sage* || $help == *Kneser* ]] \
    || { rm -f "$BIN/$tool"; die "$BIN/$tool does not run: ${help:0:300}"; }
done

echo "build_kenlm: built $BIN/lmplz and $BIN/build_binary in $(( $(date +%s) - start )) s"
