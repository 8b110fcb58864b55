#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each for a bounded time, printing executions.
#   tests/fuzz/run.sh [--build-dir DIR] [--seconds N] [--skip-code C] [TARGET...]
# TARGET names drop the "fuzz_" prefix: units device_ini csv zeus config store_struct store_raw.
# The seed corpus (tests/fuzz/corpus/<target>) is only read; new inputs go to DIR/corpus/<target>,
# crashes to DIR/artifacts/. Exit 0 when no target crashed, 1 otherwise, C (default 0) when clang
# or libFuzzer is missing (ctest registers it with 77 = skipped).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/build-fuzz"
seconds=60
skip_code=0
targets=()
while (($#)); do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --skip-code) skip_code=$2; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=(units device_ini csv zeus config store_struct store_raw)

cxx=$(command -v clang++ || command -v clang++-14 || true)
if [[ -z "$cxx" ]]; then
  echo "fuzz: clang++ not found (install clang and libclang-rt-14-dev); skipping" >&2
  exit "$skip_code"
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    "$cxx" -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz: $cxx cannot link libFuzzer (install libclang-rt-14-dev); skipping" >&2
  exit "$skip_code"
fi

echo "fuzz: building in $build" >&2
cmake -S "$here" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target $(printf 'fuzz_%s ' "${targets[@]}") >/dev/null

mkdir -p "$build/artifacts"
status=0
printf '%-14s %12s %8s  %s\n' target executions seconds result
for t in "${targets[@]}"; do
  work="$build/corpus/$t"
  mkdir -p "$work"
  args=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$build/artifacts/$t-")
  [[ -f "$here/dict/$t.dict" ]] && args+=(-dict="$here/dict/$t.dict")
  log="$build/$t.log"
  set +e
  (cd "$build" && "$build/fuzz_$t" "${args[@]}" "$work" "$here/corpus/$t" >"$log" 2>&1)
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | awk '{print $5}' | tail -1)
  if ((rc == 0)); then
    result=ok
  else
    result="CRASH (exit $rc): see $log and $build/artifacts/$t-*"
    status=1
    grep -E 'ERROR|runtime error|invariant|SUMMARY' "$log" | head -5 >&2 || true
  fi
  printf '%-14s %12s %8s  %s\n' "$t" "${execs:-?}" "${secs:-?}" "$result"
done
exit $status
