#!/usr/bin/env bash
# Compare `blockbloom dedup` with the usual line-dedup tools on one generated file, in one run.
#   scripts/compare-dedup.sh [LINES]      (default 10000000: ~6.0M distinct ~68-byte URLs)
# Prints a markdown table: wall seconds and peak RSS (GNU time), output lines, and lines
# missing against awk '!seen[$0]++' (for blockbloom: its false positives). Tools that are not
# installed are skipped. Needs /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
lines="${1:-10000000}"
cargo build --release -q -p blockbloom-cli -p blockbloom-workload
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
target/release/gen-urls "$lines" 0.4 42 > "$work/urls.txt"
distinct=$(LC_ALL=C sort -u "$work/urls.txt" | wc -l)
echo "input: $lines lines, $distinct distinct, $(du -h "$work/urls.txt" | cut -f1); $(nproc) cores; $(date -u +%F)"
echo
echo "| tool | wall s | peak RSS MiB | lines out | missing vs awk |"
echo "|---|---|---|---|---|"
measure() {
  local name="$1"; shift
  command -v "$1" >/dev/null 2>&1 || return 0
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" < "$work/urls.txt" > "$work/out" 2>/dev/null || return 0
  read -r wall rss < "$work/time"
  local n; n=$(wc -l < "$work/out")
  local dups; dups=$(LC_ALL=C sort "$work/out" | uniq -d | wc -l)
  [ "$dups" -eq 0 ] || name="$name (PRINTED $dups DUPLICATES)"
  echo "| $name | $wall | $((rss / 1024)) | $n | $((distinct - n)) |"
}
measure "LC_ALL=C sort -u (order lost)" env LC_ALL=C sort -u
measure "perl -ne 'print if !\$s{\$_}++'" perl -ne 'print if !$s{$_}++'
measure "gawk '!seen[\$0]++'" gawk '!seen[$0]++'
measure "mawk '!seen[\$0]++'" mawk '!seen[$0]++'
measure "huniq" huniq
measure "runiq" runiq
measure "runiq -f compact (Bloom)" runiq -f compact
measure "blockbloom dedup --capacity $lines (1%)" target/release/blockbloom dedup --capacity "$lines"
measure "blockbloom dedup --capacity $lines --fpr 0.001" target/release/blockbloom dedup --capacity "$lines" --fpr 0.001
