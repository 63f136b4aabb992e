#!/usr/bin/env bash
# Sourced by the set-up and test scripts: marker lines that say where a run's time went (the format and the
# tables: scripts/test-runner/timings.ts). Each goes to stderr, and to $EL_TIMINGS when set.
el_now() { date +%s%3N; }
el_mark() {
  printf '%s\n' "$1" >&2
  if [ -n "${EL_TIMINGS:-}" ]; then printf '%s\n' "$1" >>"$EL_TIMINGS"; fi
}
# The machine's CPU counters (all cores, every process): busy and total ticks since boot.
el_machine() {
  local _ user nice system idle iowait irq softirq steal
  read -r _ user nice system idle iowait irq softirq steal _ </proc/stat 2>/dev/null || return 0
  local busy=$((user + nice + system + irq + softirq + steal))
  el_mark "el-machine $(el_now) busy=$busy total=$((busy + idle + iowait))"
}
# timed <phase name> <command…>: runs the command (in a subshell) and marks the phase with the CPU seconds of
# the processes it ran and waited for.
timed() {
  local name=$1
  shift
  (
    start=$(el_now)
    rc=0
    "$@" || rc=$?
    cpu=-
    if read -r -a stat </proc/$BASHPID/stat 2>/dev/null; then
      # cutime and cstime (fields 16, 17) once the command is done; the command name (field 2) has no spaces.
      ticks=$((stat[13] + stat[14] + stat[15] + stat[16]))
      cpu=$((ticks / 100)).$(printf '%02d' $((ticks % 100)))
    fi
    el_mark "el-phase ${name// /_} start=$start end=$(el_now) cpu=$cpu"
    exit "$rc"
  )
}

# el_own_timings <file name>: a script run on its own (not under .ci/run, which keeps one timings file for the
# whole run) keeps its markers in .data/<file name>; succeeds only then, so the script prints the tables at its end.
el_own_timings() {
  [ -z "${EL_TIMINGS:-}" ] || return 1
  local data
  data="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.data"
  mkdir -p "$data"
  export EL_TIMINGS="$data/$1"
  : >"$EL_TIMINGS"
}
# el_print_timings: the per-phase and per-file tables of $EL_TIMINGS, on stderr.
el_print_timings() {
  printf '\n' >&2
  (cd "$(dirname "${BASH_SOURCE[0]}")/.." && node --import tsx scripts/test-runner/timings.ts "$EL_TIMINGS") >&2 || true
}
