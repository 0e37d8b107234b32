#!/usr/bin/env bash
# The installed manual pages as built: groff renders them without a warning,
# fad(1) has every command `fad --help` lists and fadd(8) every option
# `fadd --help` lists. Usage: man_pages_test.sh MAN_DIR FAD FADD
set -euo pipefail
man_dir=$1 fad=$2 fadd=$3
command -v groff >/dev/null || { echo "SKIP: groff is not installed (scripts/setup.sh installs it)"; exit 77; }
for page in "$man_dir/fad.1" "$man_dir/fadd.8"; do
  [[ -s $page ]] || { echo "missing $page"; exit 1; }
  warnings=$(groff -man -ww -z "$page" 2>&1)
  [[ -z $warnings ]] || { echo "groff warns about $page:"; echo "$warnings"; exit 1; }
done
render() { MANWIDTH=200 groff -man -Tutf8 -P -c -P -b -P -u "$1" 2>/dev/null; }
fad_page=$(render "$man_dir/fad.1")
fadd_page=$(render "$man_dir/fadd.8")
missing=0
# A command's line starts with two spaces; its wrapped description's lines with more.
for cmd in $("$fad" --help | sed -n '/^Subcommands:/,$p' | awk 'NR > 1 && /^  [^ ]/ {print $1}'); do
  grep -q "fad $cmd" <<<"$fad_page" || { echo "fad(1) lacks 'fad $cmd'"; missing=1; }
done
for opt in $("$fadd" --help | grep -o -- '--[a-z-]*' | sort -u); do
  grep -q -- "$opt" <<<"$fadd_page" || { echo "fadd(8) lacks $opt"; missing=1; }
done
exit $missing
