#!/usr/bin/env bash
# Compare `blockbloom dedup` with the usual line-dedup tools on two generated inputs, in one
# run: a 60%-distinct file (10^7 lines: ~6.0M distinct ~68-byte URLs) and a crawl's link
# stream (2.5M links, ~1% distinct, mostly navigation repeats: `gen-urls … crawl`).
#   scripts/compare-dedup.sh [LINES] [CRAWL_LINES]     (defaults 10000000 2500000)
# Prints a markdown table per input: wall seconds and peak RSS (GNU time), output lines, and
# lines missing against awk '!seen[$0]++' (for blockbloom: its false positives). Tools that
# are not installed are skipped. Needs /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
lines="${1:-10000000}"
crawl_lines="${2:-2500000}"
cargo build --release -q -p blockbloom-cli -p blockbloom-workload
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

measure() {
  local name="$1"; shift
  command -v "$1" >/dev/null 2>&1 || return 0
  /usr/bin/time -f "%e %M" -o "$work/time" "$@" < "$work/in.txt" > "$work/out" 2>/dev/null || return 0
  read -r wall rss < "$work/time"
  local n; n=$(wc -l < "$work/out")
  local dups; dups=$(LC_ALL=C sort "$work/out" | uniq -d | wc -l)
  [ "$dups" -eq 0 ] || name="$name (PRINTED $dups DUPLICATES)"
  echo "| $name | $wall | $((rss / 1024)) | $n | $((distinct - n)) |"
}

table() {
  distinct=$(LC_ALL=C sort -u "$work/in.txt" | wc -l)
  local n; n=$(wc -l < "$work/in.txt")
  echo "input: $1: $n lines, $distinct distinct, $(du -h "$work/in.txt" | cut -f1); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
  echo
  echo "| tool | wall s | peak RSS MiB | lines out | missing vs awk |"
  echo "|---|---|---|---|---|"
  measure "LC_ALL=C sort -u (order lost)" env LC_ALL=C sort -u
  measure "perl -ne 'print if !\$s{\$_}++'" perl -ne 'print if !$s{$_}++'
  measure "gawk '!seen[\$0]++'" gawk '!seen[$0]++'
  measure "mawk '!seen[\$0]++'" mawk '!seen[$0]++'
  measure "huniq" huniq
  measure "runiq" runiq
  measure "runiq -f compact (Bloom)" runiq -f compact
  measure "blockbloom dedup (growing, 1%)" target/release/blockbloom dedup
  measure "blockbloom dedup --capacity $2 (1%)" target/release/blockbloom dedup --capacity "$2"
  measure "blockbloom dedup --capacity $2 --fpr 0.001" target/release/blockbloom dedup --capacity "$2" --fpr 0.001
  echo
}

target/release/gen-urls "$lines" 0.4 42 > "$work/in.txt"
table "60% distinct" "$lines"
target/release/gen-urls "$crawl_lines" 0.99 7 crawl > "$work/in.txt"
table "crawl link stream" "$((crawl_lines / 50))"
