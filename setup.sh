#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (run as root; sudo is used only when not root):
#   bash setup.sh demo   install what the demo needs, build the pacer programs only (Release, no tests,
#                        no benchmarks), run the end-to-end demo
#   bash setup.sh test   install everything (test libraries, clang for the fuzzers, Slurm), build
#                        everything (Release), run the whole test suite (ctest)
#   bash setup.sh build  install everything and build everything, run nothing
#   bash setup.sh sanitize  the same set-up, then the test suite built with AddressSanitizer and
#                        UndefinedBehaviorSanitizer (RelWithDebInfo, in build-asan; the fuzz targets
#                        have their own sanitized build: tests/fuzz/run.sh)
# Environment: BUILD_DIR (default build, build-asan for sanitize), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-demo}
shift || true
case "$mode" in
  demo | test | build | sanitize) ;;
  *) echo "setup.sh: unknown mode '$mode' (demo, test, build, sanitize)" >&2; exit 2 ;;
esac
if [ "$mode" = sanitize ]; then
  BUILD_DIR=${BUILD_DIR:-build-asan}
  config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DPACER_SANITIZE=ON)
else
  BUILD_DIR=${BUILD_DIR:-build}
  config=(-DCMAKE_BUILD_TYPE=Release)
fi
# The demo needs the programs only; every other mode builds the tests and benchmarks too.
if [ "$mode" = demo ]; then
  config+=(-DPACER_BUILD_TESTS=OFF -DPACER_BUILD_BENCHMARKS=OFF)
  targets=(--target pacer)
else
  config+=(-DPACER_BUILD_TESTS=ON -DPACER_BUILD_BENCHMARKS=ON)
  targets=()
fi
JOBS=${JOBS:-$(nproc)}
# ccache, where the machine has it, makes rebuilds across clones and worktrees cheap.
if command -v ccache >/dev/null 2>&1; then
  config+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$(dirname "$PWD")}
fi

# What building pacer and running the demo need (the demo trains on Fashion-MNIST and draws its
# figures with gnuplot); the tests add their libraries, the text data set, clang for the fuzzers,
# a single-node Slurm cluster and Python with h5py (the examples of docs/trace-store.md).
packages=(
  cmake g++ make pkg-config
  libtorch-dev libhdf5-dev libboost-program-options-dev libeigen3-dev
  libspdlog-dev libfmt-dev zlib1g-dev libpng-dev
  gnuplot-nox dataset-fashion-mnist libopenblas0-openmp
)
if [ "$mode" != demo ]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev r-cran-janeaustenr python3 python3-h5py
    clang libclang-rt-14-dev
    slurm-wlm munge
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

cmake -S . -B "$BUILD_DIR" "${config[@]}" >&2
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}" >&2

case "$mode" in
  demo) exec "./$BUILD_DIR/pacer" demo "$@" ;;
  test) exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "$@" ;;
  sanitize) exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -E fuzz_smoke "$@" ;;
  build) ;;
esac
