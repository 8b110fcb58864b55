#!/usr/bin/env bash
# Every `pacer COMMAND ... --option` that a message, a help text, a doc or a spec names is an option
# that COMMAND has, because a hint that names a missing option leaves the user stuck (a store hint
# named the profile command's option 'out', which it does not have). Scans the sources, docs and
# specs; asks the built program for each command's options.
# Usage: named_flags_exist.sh PACER_BINARY [ROOT]
set -euo pipefail
pacer=$1
root=${2:-$(cd "$(dirname "$0")/../../.." && pwd)}
cd "$root"
declare -A options  # command -> " opt1 opt2 ... " ("-" when it is not a command)
# The commands, one or two words, from the global help ("  import zeus   summary").
commands=" $("$pacer" --help | sed -nE 's/^  ([a-z]+( [a-z]+)?)  .*/\1/p' | tr '\n' '|') "
is_command() { [[ "$commands" == *"|$1|"* || "$commands" == *" $1|"* ]]; }
options_of() {
  local cmd=$1
  if [ -z "${options[$cmd]+x}" ]; then
    local help
    # shellcheck disable=SC2086  # a two-word command is two arguments
    if help=$("$pacer" $cmd --help 2>/dev/null); then
      options[$cmd]=" $(grep -oE -- '--[a-z][a-z0-9-]*' <<<"$help" | sed 's/^--//' | sort -u | tr '\n' ' ') "
    else
      options[$cmd]="-"
    fi
  fi
  known=${options[$cmd]}
}
bad=0
checked=0
cut='^([^`"|;#)]*)'
flag_re='(^|[^A-Za-z0-9_-])--([a-z][a-z0-9-]*)(.*)$'
while IFS= read -r hit; do
  where=${hit%%:pacer *}
  text=pacer\ ${hit#*:pacer }
  # The command line ends at a quote, a backquote, a pipe, a semicolon, a comment, a bracket, "&&"
  # or an escaped newline.
  text=${text%%&&*}
  text=${text%%\\n*}
  [[ "$text" =~ $cut ]] && text=${BASH_REMATCH[1]}
  read -r _ first second _ <<<"$text"
  cmd=$first
  if [ -n "${second:-}" ] && is_command "$first $second"; then cmd="$first $second"; fi
  is_command "$cmd" || continue
  options_of "$cmd"  # sets known (not in a subshell, so that the cache keeps it)
  rest=$text
  while [[ "$rest" =~ $flag_re ]]; do
    flag=${BASH_REMATCH[2]}
    rest=${BASH_REMATCH[3]}
    checked=$((checked + 1))
    case "$flag" in help | config | log-level) continue ;; esac
    if [[ "$known" != *" $flag "* ]]; then
      echo "$where: 'pacer $cmd' has no option --$flag: $text"
      bad=1
    fi
  done
done < <(grep -rnoE --include='*.cpp' --include='*.hpp' --include='*.md' --include='*.ini' --include='*.sh' \
  --exclude-dir=build --exclude-dir='build-*' --exclude-dir=.git 'pacer [a-z]+( [a-z]+)?[^`"|;#)]*' . || true)
echo "$checked options named after a pacer command checked"
if [ "$bad" -ne 0 ]; then
  echo "a message, help text or document names an option the command does not have (above)"
  exit 1
fi
