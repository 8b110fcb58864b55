#!/usr/bin/env bash
# setup.sh's board detection, in its dry run (nothing installed, nothing built): with an L4T release
# file it takes the torch prefix python3 names (a stand-in python3 here) or a Torch_DIR, and leaves
# Debian's libtorch out of its packages; without one it keeps Debian's libtorch. apt-get, sudo and
# cmake are stand-ins that record any call: a dry run makes none.
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/torch/share/cmake/Torch" "$tmp/torch-dir"
: >"$tmp/torch/share/cmake/Torch/TorchConfig.cmake"
: >"$tmp/torch-dir/TorchConfig.cmake"
echo '# R35 (release), REVISION: 4.1, GCID: 33958178, BOARD: t186ref, EABI: aarch64, DATE: Tue Aug  1 19:57:35 UTC 2023' >"$tmp/nv_tegra_release"
cat >"$tmp/bin/python3" <<PY
#!/bin/sh
# Stands in for JetPack's python3 with NVIDIA's PyTorch.
case "\$2" in *torch.utils.cmake_prefix_path*) echo "$tmp/torch/share/cmake"; exit 0 ;; esac
exit 1
PY
for tool in apt-get sudo cmake; do
  printf '#!/bin/sh\necho "%s $*" >>"%s/calls"\n' "$tool" "$tmp" >"$tmp/bin/$tool"
done
chmod +x "$tmp"/bin/*
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
run() {  # run NAME ENV... : setup.sh demo's dry run with the stand-ins first on PATH
  local name=$1
  shift
  env PATH="$tmp/bin:$PATH" PACER_SETUP_DRY_RUN=1 "$@" bash "$repo/setup.sh" demo >"$tmp/$name.out" 2>&1
}

# L4T, torch from python3.
run l4t PACER_L4T_RELEASE="$tmp/nv_tegra_release" || fail "L4T dry run exited $?: $(cat "$tmp/l4t.out")"
grep -q "^setup: board: L4T R35.4.1" "$tmp/l4t.out" || fail "L4T not detected: $(cat "$tmp/l4t.out")"
grep -q -- "-DCMAKE_PREFIX_PATH=$tmp/torch/share/cmake" "$tmp/l4t.out" || fail "python3's torch prefix not used: $(cat "$tmp/l4t.out")"
grep "^setup: packages:" "$tmp/l4t.out" | grep -q "libtorch-dev" && fail "L4T installs Debian's libtorch: $(grep packages "$tmp/l4t.out")"
grep -q "libtorch-dev" "$tmp/l4t.out" && fail "L4T names libtorch-dev: $(cat "$tmp/l4t.out")"

# L4T, a Torch_DIR given: python3 is not asked.
run torchdir PACER_L4T_RELEASE="$tmp/nv_tegra_release" Torch_DIR="$tmp/torch-dir" || fail "Torch_DIR dry run exited $?"
grep -q -- "-DTorch_DIR=$tmp/torch-dir" "$tmp/torchdir.out" || fail "Torch_DIR not used: $(cat "$tmp/torchdir.out")"
grep -q "CMAKE_PREFIX_PATH" "$tmp/torchdir.out" && fail "python3 asked although Torch_DIR was given"

# L4T with no torch at all: one clear line, non-zero exit.
printf '#!/bin/sh\necho "ModuleNotFoundError: No module named torch" >&2\nexit 1\n' >"$tmp/bin/python3"
if run notorch PACER_L4T_RELEASE="$tmp/nv_tegra_release"; then
  fail "L4T without torch succeeded"
fi
grep -q "install NVIDIA's PyTorch" "$tmp/notorch.out" || fail "no advice without torch: $(cat "$tmp/notorch.out")"

# Debian: Debian's libtorch, no torch prefix.
run debian PACER_L4T_RELEASE="$tmp/no-such-file" || fail "Debian dry run exited $?"
grep -q "^setup: board: Debian" "$tmp/debian.out" || fail "Debian not detected: $(cat "$tmp/debian.out")"
grep "^setup: packages:" "$tmp/debian.out" | grep -q "libtorch-dev" || fail "Debian lost libtorch-dev"
grep -q "CMAKE_PREFIX_PATH\|Torch_DIR" "$tmp/debian.out" && fail "Debian given a torch prefix"

[ -e "$tmp/calls" ] && fail "a dry run called: $(cat "$tmp/calls")"
if [ "$failures" -ne 0 ]; then exit 1; fi
echo "setup.sh board detection: L4T (python3 prefix, Torch_DIR, no torch) and Debian as expected"
