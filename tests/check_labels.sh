#!/usr/bin/env bash
# Every test carries one of the suite labels of tests/CMakeLists.txt, so `ctest -L unit`, `-L cli`,
# ... together run the whole suite and a new test cannot fall outside all of them.
set -euo pipefail
build=$1
unlabelled=$(ctest --test-dir "$build" -N -LE '^(unit|dnn|cli|e2e|readme|fuzz)$' | grep -E '^ *Test +#' || true)
if [ -n "$unlabelled" ]; then
  echo "$unlabelled"
  echo "tests without a suite label (above): give their suite LABELS in its CMakeLists.txt (tests/CMakeLists.txt lists them)"
  exit 1
fi
echo "every test has a suite label"
