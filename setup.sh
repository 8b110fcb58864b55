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
#   bash setup.sh arm64  install the cross compiler and qemu-user, then tests/arm64/run.sh: the light
#                        part (no libtorch) cross-built for aarch64 and its unit tests run under qemu
# On a Jetson (NVIDIA's L4T, which names its release in /etc/nv_tegra_release) demo, test and build
# do not install Debian's libtorch: they build against the board's PyTorch (CUDA), found with
# `python3 -c 'import torch; print(torch.utils.cmake_prefix_path)'` or given as Torch_DIR
# (docs/jetson.md).
# Environment: BUILD_DIR (default build, build-asan for sanitize), JOBS (default: number of cores),
# Torch_DIR (the folder holding TorchConfig.cmake), PACER_L4T_RELEASE (the release file that marks a
# board; default /etc/nv_tegra_release), PACER_SETUP_DRY_RUN=1 (print the board, the packages and the
# CMake configuration, then stop: nothing is installed or built).
set -euo pipefail
cd "$(dirname "$0")"
mode=${1:-demo}
shift || true
case "$mode" in
  demo | test | build | sanitize | arm64) ;;
  *) echo "setup.sh: unknown mode '$mode' (demo, test, build, sanitize, arm64)" >&2; exit 2 ;;
esac
dry_run=${PACER_SETUP_DRY_RUN:-0}
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# Installs the packages of "$@" that are not installed yet (or, in a dry run, lists them).
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  echo "setup: packages: $*" >&2
  ((${#missing[@]})) || return 0
  if [ "$dry_run" = 1 ]; then
    echo "setup: would install: ${missing[*]}" >&2
    return 0
  fi
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# The aarch64 cross build: host tools only (the arm64 libraries go into a sysroot folder, never
# into the host's packages).
if [ "$mode" = arm64 ]; then
  install_missing cmake make g++-aarch64-linux-gnu qemu-user
  [ "$dry_run" = 1 ] && exit 0
  exec bash tests/arm64/run.sh "$@"
fi

# A Jetson: L4T's release file, "# R35 (release), REVISION: 4.1, ...".
l4t_release=${PACER_L4T_RELEASE:-/etc/nv_tegra_release}
board=debian
if [ -f "$l4t_release" ]; then
  board=l4t
  echo "setup: board: L4T $(sed -nE '1s/^# R([0-9]+) \(release\), REVISION: ([0-9.]+).*/R\1.\2/p' "$l4t_release") ($l4t_release): JetPack's PyTorch, CUDA on" >&2
else
  echo "setup: board: Debian ($l4t_release absent): Debian's libtorch (CPU)" >&2
fi
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
  libhdf5-dev libboost-program-options-dev libeigen3-dev
  libspdlog-dev libfmt-dev zlib1g-dev libpng-dev
  gnuplot-nox dataset-fashion-mnist libopenblas0-openmp
)
# On a board libtorch is the one of NVIDIA's PyTorch for its JetPack (CUDA), never Debian's (CPU).
if [ "$board" = debian ]; then
  packages+=(libtorch-dev)
else
  if [ -n "${Torch_DIR:-}" ]; then
    [ -f "$Torch_DIR/TorchConfig.cmake" ] || [ -f "$Torch_DIR/torch-config.cmake" ] || {
      echo "setup.sh: Torch_DIR=$Torch_DIR holds no TorchConfig.cmake: give the folder that does (.../share/cmake/Torch)" >&2
      exit 1
    }
    echo "setup: torch: Torch_DIR=$Torch_DIR" >&2
    config+=(-DTorch_DIR="$Torch_DIR")
  else
    torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || torch_prefix=""
    if [ -z "$torch_prefix" ] || [ ! -d "$torch_prefix" ]; then
      echo "setup.sh: on L4T pacer builds against the board's PyTorch, and python3 cannot import torch: install NVIDIA's PyTorch for your JetPack (docs/jetson.md) or give Torch_DIR=.../share/cmake/Torch" >&2
      exit 1
    fi
    echo "setup: torch: $torch_prefix (python3 torch.utils.cmake_prefix_path)" >&2
    config+=(-DCMAKE_PREFIX_PATH="$torch_prefix")
  fi
  # A CUDA libtorch's TorchConfig finds the CUDA toolkit JetPack installs under /usr/local/cuda.
  cuda=${CUDA_HOME:-/usr/local/cuda}
  if [ -x "$cuda/bin/nvcc" ]; then
    config+=(-DCUDA_TOOLKIT_ROOT_DIR="$cuda" -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc")
  else
    echo "setup: warning: no $cuda/bin/nvcc: a CUDA PyTorch needs the CUDA toolkit (sudo apt-get install nvidia-jetpack)" >&2
  fi
fi
if [ "$mode" != demo ]; then
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev r-cran-janeaustenr python3 python3-h5py
    clang libclang-rt-14-dev
    slurm-wlm munge
  )
fi
install_missing "${packages[@]}"
echo "setup: cmake -S . -B $BUILD_DIR ${config[*]}" >&2
[ "$dry_run" = 1 ] && exit 0
# Ubuntu 20.04 and 22.04 (JetPack 5, 6) ship a CMake older than pacer needs.
cmake_version=$(cmake --version | sed -nE '1s/.* ([0-9]+\.[0-9]+).*/\1/p')
if [ "$(printf '%s\n' 3.25 "$cmake_version" | sort -V | head -1)" != 3.25 ]; then
  echo "setup.sh: cmake $cmake_version is older than 3.25, which pacer needs: pip3 install --user 'cmake>=3.25' and put ~/.local/bin first on PATH (docs/jetson.md)" >&2
  exit 1
fi

cmake -S . -B "$BUILD_DIR" "${config[@]}" >&2
cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}" >&2

case "$mode" in
  demo) exec "./$BUILD_DIR/pacer" demo "$@" ;;
  test) exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" "$@" ;;
  sanitize) exec ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS" -E fuzz_smoke "$@" ;;
  build) ;;
esac
