#!/usr/bin/env bash
# Compare `blockbloom dedup` with the usual line-dedup tools on two generated inputs, in one
# run: a 60%-distinct file (10^7 lines: ~6.0M distinct ~68-byte URLs) and a crawl's link
# stream (2.5M links, ~1% distinct, mostly navigation repeats: `gen-urls … crawl`).
#   REPS=5 scripts/compare-dedup.sh [LINES] [CRAWL_LINES]   (defaults 10000000 2500000, REPS=1)
# Each tool runs REPS times in turn with the others (round-robin, so that a slow spell of a
# shared machine hits every tool alike). Prints a markdown table per input: the median wall
# seconds and the largest peak RSS (GNU time) of the REPS runs, output lines, and
# lines missing against awk '!seen[$0]++' (for blockbloom: its false positives). Tools that
# are not installed are skipped. Needs /usr/bin/time (Debian package `time`).
set -euo pipefail
cd "$(dirname "$0")/.."
lines="${1:-10000000}"
crawl_lines="${2:-2500000}"
cargo build --release -q -p blockbloom-cli -p blockbloom-workload
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

reps="${REPS:-1}"
tools=()

# tool NAME PROGRAM COMMAND: one tool of the table, skipped if PROGRAM is not installed;
# COMMAND is shell text (run with eval).
tool() {
  command -v "$2" >/dev/null 2>&1 || return 0
  names+=("$1")
  tools+=("$3")
}

# One timed run of tool $1 (an index), appended to $work/times.$1.
run_one() {
  /usr/bin/time -f "%e %M" -o "$work/time" bash -c "${tools[$1]}" < "$work/in.txt" > "$work/out.$1" 2>/dev/null || return 0
  cat "$work/time" >> "$work/times.$1"
}

# The table row of tool $1: median wall, largest RSS, output checks.
row() {
  [ -s "$work/times.$1" ] || return 0
  local wall rss n dups name="${names[$1]}"
  wall=$(sort -n "$work/times.$1" | awk '{w[NR]=$1} END {print w[int((NR+1)/2)]}')
  rss=$(awk '$2 > m {m = $2} END {print m}' "$work/times.$1")
  n=$(wc -l < "$work/out.$1")
  dups=$(LC_ALL=C sort "$work/out.$1" | uniq -d | wc -l)
  [ "$dups" -eq 0 ] || name="$name (PRINTED $dups DUPLICATES)"
  echo "| $name | $wall | $((rss / 1024)) | $n | $((distinct - n)) |"
}

table() {
  distinct=$(LC_ALL=C sort -u "$work/in.txt" | wc -l)
  local n; n=$(wc -l < "$work/in.txt")
  echo "input: $1: $n lines, $distinct distinct, $(du -h "$work/in.txt" | cut -f1); $(nproc) cores; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F); median of $reps"
  echo
  echo "| tool | wall s | peak RSS MiB | lines out | missing vs awk |"
  echo "|---|---|---|---|---|"
  tools=(); names=()
  rm -f "$work"/times.* "$work"/state*
  local bb=target/release/blockbloom
  tool "LC_ALL=C sort -u (order lost)" sort "LC_ALL=C sort -u"
  tool "perl -ne 'print if !\$s{\$_}++'" perl "perl -ne 'print if !\$s{\$_}++'"
  tool "gawk '!seen[\$0]++'" gawk "gawk '!seen[\$0]++'"
  tool "mawk '!seen[\$0]++'" mawk "mawk '!seen[\$0]++'"
  tool "huniq" huniq "huniq"
  tool "runiq" runiq "runiq"
  tool "runiq -f compact (Bloom)" runiq "runiq -f compact"
  tool "blockbloom dedup (growing, 1%)" $bb "$bb dedup"
  tool "blockbloom dedup --capacity $2 (1%)" $bb "$bb dedup --capacity $2"
  tool "blockbloom dedup --capacity $2 --fpr 0.001" $bb "$bb dedup --capacity $2 --fpr 0.001"
  tool "blockbloom dedup --state (new, growing)" $bb "rm -f $work/state*; $bb dedup --state $work/state"
  for ((r = 0; r < reps; r++)); do
    for i in "${!tools[@]}"; do run_one "$i"; done
  done
  for i in "${!tools[@]}"; do row "$i"; done
  echo
}

target/release/gen-urls "$lines" 0.4 42 > "$work/in.txt"
table "60% distinct" "$lines"
target/release/gen-urls "$crawl_lines" 0.99 7 crawl > "$work/in.txt"
table "crawl link stream" "$((crawl_lines / 50))"
