#!/usr/bin/env bash
# Compares bidiload binaries (two builds of the client, or one with
# different flags) on the audio mode: the variants take turns, ROUNDS
# times, against one server, so that each round's pair meets the same
# host. On a noisy host compare the paired ratios, not figures from
# different sittings. Prints each run's line, then per variant the median
# CPU-s per session-minute and its range, and the median ratio of each
# variant to the first one, round by round. Not part of CI.
#
#   go build -o /tmp/old ./internal/cmd/bidiload   # at the base commit
#   go build -o /tmp/new ./internal/cmd/bidiload
#   internal/cmd/bidiload/ab.sh /tmp/old /tmp/new
#   PIN=1 N=1500 internal/cmd/bidiload/ab.sh /tmp/old "/tmp/new -procs 1"
#
# A variant is a binary and its extra flags. N sessions (2000), ROUNDS
# (6), DUR (8s), URL (frame: the minimal event-stream echo; echo for
# biditest). PIN=1 pins the server to CPU 1 and the clients to CPU 0:
# one core for the client, as "sessions per core" means.
set -euo pipefail
cd "$(dirname "$0")/../../.."
[ $# -ge 2 ] || { echo "usage: $0 BIN[ FLAGS] BIN[ FLAGS]..." >&2; exit 2; }
N=${N:-2000}
ROUNDS=${ROUNDS:-6}
DUR=${DUR:-8s}
URL=${URL:-frame}
OUT=${OUT:-/tmp/bidiload-ab}
server=$(echo "$1" | cut -d' ' -f1)

rm -rf "$OUT" && mkdir -p "$OUT/server"
pin_server=() pin_client=()
if [ "${PIN:-0}" = 1 ]; then pin_server=(taskset -c 1); pin_client=(taskset -c 0); fi
"${pin_server[@]}" "$server" server -dir "$OUT/server" -streams 100000 -verify=false >"$OUT/server.log" 2>&1 &
spid=$!
trap 'kill $spid 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -f "$OUT/server/raw.url" ] && break; sleep 0.1; done

for r in $(seq "$ROUNDS"); do
  v=0
  for variant in "$@"; do
    read -r -a args <<<"$variant"
    line=$("${pin_client[@]}" "${args[@]:0:1}" audio "${args[@]:1}" -n "$N" -duration "$DUR" \
      -url "$(cat "$OUT/server/$URL.url")" -cafile "$OUT/server/ca.pem" -label "v$v")
    echo "round $r v$v ($variant): $line"
    echo "$r $v $(echo "$line" | tr ' ' '\n' | sed -n 's/^cpu_s_per_session_min=//p')" >>"$OUT/cpu.txt"
    v=$((v + 1))
  done
done

echo "== CPU-s per session-minute (median, range; ratio to v0, median of the rounds)"
awk '
  { cpu[$2, $1] = $3; n[$2]++; if ($2 > maxv) maxv = $2; if ($1 > maxr) maxr = $1 }
  function median(a, k,   i, j, t) {
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
  }
  END {
    for (v = 0; v <= maxv; v++) {
      delete c; delete q; k = 0
      for (r = 1; r <= maxr; r++) { k++; c[k] = cpu[v, r]; q[k] = cpu[v, r] / cpu[0, r] }
      lo = c[1]; hi = c[1]; for (i = 1; i <= k; i++) { if (c[i] < lo) lo = c[i]; if (c[i] > hi) hi = c[i] }
      printf "v%d  median %.4f  range %.4f-%.4f  ratio %.3f\n", v, median(c, k), lo, hi, median(q, k)
    }
  }' "$OUT/cpu.txt"
