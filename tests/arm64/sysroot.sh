#!/usr/bin/env bash
# Builds an arm64 sysroot of the Debian 12 packages the light part of pacer needs (everything that
# does not link libtorch) in a folder, without touching the host's packages: apt runs with a
# private state (its own package lists, an empty dpkg status, arm64 only), downloads the packages
# and their dependencies, and each .deb is unpacked with dpkg -x. Nothing is installed on the host.
#   tests/arm64/sysroot.sh DIR     (DIR/sysroot is the result; DIR/apt the private apt state)
# Re-running reuses the downloaded packages.
set -euo pipefail
dir=${1:?usage: sysroot.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
apt_dir=$dir/apt
sysroot=$dir/sysroot
# The light part's libraries (setup.sh's lists without libtorch, libpng and the tools).
packages=(
  libboost-program-options-dev libhdf5-dev libeigen3-dev libspdlog-dev libfmt-dev zlib1g-dev
  libgtest-dev libgmock-dev libstdc++6 libgcc-s1 libc6
)
mkdir -p "$apt_dir"/lists/partial "$apt_dir"/archives/partial "$apt_dir"/etc/preferences.d
: >"$apt_dir/status"
# The host's sources (deb822 or one-line form), its keys and proxies, arm64 only.
sources=()
[ -f /etc/apt/sources.list ] && sources+=(-o Dir::Etc::SourceList=/etc/apt/sources.list)
opts=(
  -o APT::Architecture=arm64 -o APT::Architectures::=arm64
  -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::status="$apt_dir/status"
  -o Dir::Cache="$apt_dir/cache" -o Dir::Cache::archives="$apt_dir/archives"
  -o Dir::Etc::Preferences="$apt_dir/etc/preferences" -o Dir::Etc::PreferencesParts="$apt_dir/etc/preferences.d"
  -o Debug::NoLocking=1 -o APT::Get::AllowUnauthenticated=false
  "${sources[@]}"
)
mkdir -p "$apt_dir/cache"
if [ ! -f "$apt_dir/lists.done" ]; then
  apt-get "${opts[@]}" update -qq
  touch "$apt_dir/lists.done"
fi
apt-get "${opts[@]}" install -y -qq --download-only --no-install-recommends "${packages[@]}" >/dev/null
rm -rf "$sysroot"
mkdir -p "$sysroot"
n=0
for deb in "$apt_dir"/archives/*.deb; do
  case "$(basename "$deb")" in
    # The cross compiler brings its own C library headers and libstdc++: unpacking these too would
    # put a second copy of them on the include path.
    libc6-dev_* | linux-libc-dev_* | libstdc++-*-dev_* | libgcc-*-dev_* | libcrypt-dev_* | libnsl-dev_* | libtirpc-dev_*) continue ;;
  esac
  dpkg -x "$deb" "$sysroot"
  n=$((n + 1))
done
# Absolute symbolic links inside the packages point at the host: make them point inside the sysroot.
find "$sysroot" -type l -lname '/*' | while read -r link; do
  target=$(readlink "$link")
  ln -sfn "$sysroot$target" "$link"
done
echo "sysroot: $n packages unpacked into $sysroot ($(du -sh "$sysroot" | cut -f1))"
