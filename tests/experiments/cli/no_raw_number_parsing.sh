#!/usr/bin/env bash
# Numbers in user input (options, files, records, names) are read by the one number parser,
# base/units.hpp (units::to_number, units::to_integer, units::parse), and every caller names the
# field and the bad value in its error. std::stoi, std::stod and their kin throw std::invalid_argument
# or std::out_of_range whose message is only "stoi" or "stod", which tells a user neither the field
# nor the value; atoi/atof/strtol and kin turn garbage into 0 silently; and a second std::from_chars
# loop grows its own idea of blanks and trailing text (the two sysfs readers once disagreed on
# "5000abc"): they may appear nowhere else.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../../.." && pwd)}
cd "$root"
folders=()
for d in base traces models dnn hw sim explore experiments; do [ -d "$d" ] && folders+=("$d"); done
found=$(grep -rnE --include='*.cpp' --include='*.hpp' '(std::sto(i|l|ll|ul|ull|f|d|ld)|\<(std::)?ato(i|l|ll|f)|\<(std::)?strto(l|ll|ul|ull|f|d|ld)|std::from_chars)\(' "${folders[@]}" |
  grep -v '^base/units\.cpp:' || true)
if [ -n "$found" ]; then
  echo "$found"
  echo "raw std::sto*/ato*/strto*/from_chars number parsing (above): use units::to_number / units::to_integer (base/units.hpp) and"
  echo "name the field and the bad value in the error"
  exit 1
fi
echo "no raw std::sto*/ato*/strto*/from_chars parsing outside base/units.cpp"
