#!/usr/bin/env bash
# The README as a new user copies it, who must not meet a command that fails: every command block of
# README.md whose first line starts with `pacer ` runs as written, in order, in one fresh empty
# folder, with the built programs on PATH. Comments (from " # " to the end of a line) are dropped.
# Each command must exit 0; `pacer sweep` summaries must hold no nan (a store without a target
# relation gives nan regrets), and `pacer select` must name the oracle's choice.
#
# Usage: run_readme.sh README.md BUILD_DIR SOURCE_DIR
#
# The long campaigns run with fewer seeds and batch sizes: the table in quick() is the whole list of
# changes to the README's lines, and a table entry that no longer changes its line fails the test
# (the README moved on). The real data sets (import zeus/loudva) ship in the checkout's data/ folder,
# so every line runs, on a fresh clone too.
set -uo pipefail

readme=$1
build=$(cd "$2" && pwd)
source_dir=$(cd "$3" && pwd)

# The quick variant of a README line (stdin -> stdout).
quick() {
  case "$1" in
    "pacer relation --dataset fmnist-proxy "*) sed 's/$/ --seeds 0/' ;;
    "pacer validate "*) sed 's/--seeds 0,1/--seeds 0/' ;;
    "pacer relation --dataset fmnist-target-b "*) sed 's/--batch-sizes 8:128 --seeds 0,1/--batch-sizes 32,128 --seeds 0/' ;;
    *) return 1 ;;
  esac
}

work=$(mktemp -d "${TMPDIR:-/tmp}/pacer-readme-XXXXXX")
cleanup() {
  # Emulators the README starts in the background and did not stop (a failed step), by pid.
  for f in "$work"/run/*/pacer-emulator/pid; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT

# The command lines of the runnable blocks, comments stripped, in order.
awk '
  /^```/ { if (inblock) { inblock = 0; runnable = 0; next } inblock = 1; first = 1; next }
  inblock {
    if (first) { runnable = ($0 ~ /^pacer /); first = 0 }
    if (!runnable) next
    line = $0
    sub(/[ \t]+#.*$/, "", line)
    if (line ~ /[^ \t]/) print line
  }' "$readme" > "$work/commands.txt"

count=$(wc -l < "$work/commands.txt")
if [ "$count" -lt 10 ]; then
  echo "FAIL: only $count command lines found in the runnable blocks of $readme"
  exit 1
fi

export PATH="$build:$PATH"
mkdir -p "$work/run"
cd "$work/run" || exit 1
failed=0
n=0
while IFS= read -r line; do
  n=$((n + 1))
  cmd=$line
  if quicker=$(printf '%s\n' "$line" | quick "$line"); then
    if [ "$quicker" = "$line" ]; then
      echo "FAIL: the quick table of $0 no longer changes: $line"
      failed=1
      break
    fi
    cmd=$quicker
  fi
  start=$(date +%s)
  bash -c "$cmd" > "$work/out.$n" 2> "$work/err.$n" < /dev/null
  code=$?
  echo "$(( $(date +%s) - start )) s, exit $code: $cmd"
  if [ "$code" != 0 ]; then
    echo "FAIL: exit $code from: $cmd"
    tail -5 "$work/err.$n"
    failed=1
    break
  fi
  if [[ "$line" == "pacer sweep "* ]] && grep -qi "nan" "$work/out.$n"; then
    echo "FAIL: the sweep summary holds nan (no target relation?): $cmd"
    cat "$work/out.$n"
    failed=1
  fi
  if [[ "$line" == "pacer select "* ]] && ! grep -q "| target [^ ]" "$work/out.$n"; then
    echo "FAIL: select uses no target relation: $cmd"
    cat "$work/out.$n"
    failed=1
  fi
  if [[ "$line" == "pacer report "* ]] && grep -q "not reached" "$work/out.$n"; then
    echo "FAIL: the report holds 'not reached' (no target relation?): $cmd"
    failed=1
  fi
done < "$work/commands.txt"

if [ "$failed" = 0 ]; then
  echo "README: $n of $n command lines ran in order in a fresh folder"
fi
exit "$failed"
