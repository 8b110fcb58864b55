# Reads a `pacer export` CSV with the standard library: python3 read_export.py RECORD.csv
# The comment lines ("# key: value") hold the record's provenance, then its title line.
import csv
import re
import sys

with open(sys.argv[1], newline="") as f:
    lines = f.read().splitlines()
comments = [line[2:] for line in lines if line.startswith("# ")]
provenance = dict(c.split(": ", 1) for c in comments if ": " in c)
rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
# Each heading is "name[unit]": split it once.
units = {}
for heading in rows[0]:
    m = re.fullmatch(r"(.*?)(?:\[(.*)\])?", heading)
    units[m.group(1)] = m.group(2) or ""
print(f"{len(rows)} rows, columns: " + ", ".join(f"{n} [{u}]" if u else n for n, u in units.items()))
print(f"pacer {provenance.get('pacer_version', 'unknown')}, commit {provenance.get('git_commit', 'unknown')}")
print(f"command: {provenance.get('command_line', 'unknown')}")
