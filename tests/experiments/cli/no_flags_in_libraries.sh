#!/usr/bin/env bash
# The library layers never name a command-line flag in a message: they say what to do in domain
# words, and where a flag name helps, they throw OptionError with the option's key and the CLI
# (experiments/cli/) prints "--KEY: ...". This test fails on any string literal holding "--word"
# in a library folder, except the lines of tests/experiments/cli/flag_allowlist.txt ("path: text  # reason").
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../../.." && pwd)}
cd "$root"
folders=()
for d in base traces models dnn hw sim explore experiments; do [ -d "$d" ] && folders+=("$d"); done
allow="$root/tests/experiments/cli/flag_allowlist.txt"
# A string literal with --letter inside; comment lines are skipped below.
pattern='"([^"\\]|\\.)*(^|[^A-Za-z0-9_-])--[a-z][a-z0-9-]*([^"\\]|\\.)*"'
found=0
allowed() {
  [ -f "$allow" ] || return 1
  local entry a_file a_text
  while IFS= read -r entry; do
    case "$entry" in '' | '#'*) continue ;; esac
    a_file=${entry%%: *}
    a_text=${entry#*: }
    a_text=${a_text%%  #*}
    if [ "$a_file" = "$1" ] && [[ "$2" == *"$a_text"* ]]; then return 0; fi
  done <"$allow"
  return 1
}
while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  text=${rest#*:}
  trimmed=${text#"${text%%[![:space:]]*}"}
  case "$trimmed" in //* | \** | /\**) continue ;; esac
  if allowed "$file" "$text"; then continue; fi
  echo "$hit"
  found=1
done < <(grep -rnE --include='*.cpp' --include='*.hpp' --exclude-dir=cli "$pattern" "${folders[@]}" || true)
if [ "$found" -ne 0 ]; then
  echo "library code names a command-line flag (above): say what to do in domain words, or throw"
  echo "OptionError(\"key\", ...) and let the CLI name the flag; allow-list only with a reason in $allow"
  exit 1
fi
echo "no library string literal names a command-line flag"
