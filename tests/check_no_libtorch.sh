#!/usr/bin/env bash
# Fails when any of the given programs loads libtorch or libc10 (ldd), naming the program. A control
# check on pacer-train (which must load it) guards against an ldd that finds nothing at all.
set -euo pipefail
status=0
for program in "$@"; do
  if ldd "$program" | grep -E 'libtorch|libc10'; then
    echo "FAIL: $program loads libtorch" >&2
    status=1
  else
    echo "ok: $program loads no libtorch"
  fi
done
full="$(dirname "${!#}")/pacer-train"
# ldd's whole output first: `ldd | grep -q` under pipefail fails when grep stops reading early (SIGPIPE).
if [ -x "$full" ] && ! grep -q libtorch <<<"$(ldd "$full")"; then
  echo "FAIL: control: ldd shows no libtorch even for $full" >&2
  status=1
fi
exit $status
