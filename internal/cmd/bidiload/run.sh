#!/usr/bin/env bash
# Runs every mode of bidiload, ours (bidi's engine) and the baseline
# (net/http through Options.HTTPClient), against servers in separate
# processes, and collects the result lines in $OUT/results.txt. Not part
# of CI: it takes about 15 minutes on a 2-vCPU host. NOBUILD=1 uses an
# existing $BIN.
#
#   internal/cmd/bidiload/run.sh                 # every mode, RUNS=3
#   MODES="audio large" RUNS=1 internal/cmd/bidiload/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${BIN:-/tmp/bidiload}
OUT=${OUT:-/tmp/bidiload-results}
RUNS=${RUNS:-3}
MODES=${MODES:-probe idle dials audio large small}
[ -n "${NOBUILD:-}" ] || go build -o "$BIN" ./internal/cmd/bidiload
mkdir -p "$OUT/prof"
: > "$OUT/results.txt"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done' EXIT

# start_server NAME FLAGS...: a server process writing its files to $OUT/NAME.
start_server() {
  local name=$1; shift
  rm -rf "${OUT:?}/$name"
  "$BIN" server -dir "$OUT/$name" "$@" >"$OUT/$name.server.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -f "$OUT/$name/raw.url" ] && return; sleep 0.1; done
  echo "server $name did not start" >&2; exit 1
}
url() { cat "$OUT/$1/$2.url"; }
run() { # run SERVER URLKIND MODE FLAGS...
  local srv=$1 kind=$2 mode=$3; shift 3
  echo "# $(uptime)" >>"$OUT/results.txt"
  "$BIN" "$mode" -url "$(url "$srv" "$kind")" -cafile "$OUT/$srv/ca.pem" -dumpdir "$OUT" "$@" 2>>"$OUT/client.log" | tee -a "$OUT/results.txt" || true
}

start_server main -streams 100000                 # biditest, every check on
start_server lite -streams 100000 -verify=false   # biditest.SkipVerify: less server CPU
start_server s100 -streams 100                    # the server's limit decides

for mode in $MODES; do
  case $mode in
  probe)
    run main echo probe ;;
  idle)
    for n in 1000 10000; do
      runs=$RUNS; [ "$n" = 10000 ] && runs=1
      for r in $(seq "$runs"); do
        for e in ours; do
          run main echo idle -engine $e -n $n -label run$r -timeout 5m
          run main echo idle -engine $e -n $n -big 1000 -label run$r -timeout 5m \
            $([ "$r" = 1 ] && echo "-memprofile $OUT/prof/idle-$e-$n-big.heap")
        done
      done
    done ;;
  dials)
    for r in $(seq "$RUNS"); do
      run main echo dials -engine ours -n 1000 -cap 100 -effcap 100 -label client-cap-100
      run s100 echo dials -engine ours -n 1000 -effcap 100 -label server-limit-100
    done ;;
  audio)
    run lite echo audio -engine none -n 500 -duration 10s -label harness-floor
    for r in $(seq "$RUNS"); do
      for e in ours; do
        run lite echo audio -engine $e -n 500 -duration 10s -label run$r \
          $([ "$r" = 1 ] && echo "-cpuprofile $OUT/prof/audio-$e-500.cpu")
      done
    done
    for s in 1000 2000; do
      for e in ours; do
        run lite echo audio -engine $e -n $s -cap $s -duration 10s -label one-conn \
          -cpuprofile "$OUT/prof/audio-$e-$s.cpu"
      done
    done
    run lite echo audio -engine ours -n 1000 -cap 100 -duration 10s -label cap-100
    # FrameEcho (no net/http server under it): one connection's limit is the client's.
    for e in ours; do
      run lite frame audio -engine $e -n 500 -duration 10s -label frame
    done
    run lite frame audio -engine ours -n 2000 -cap 2000 -duration 10s -label frame-one-conn ;;
  large)
    for r in $(seq "$RUNS"); do
      for srv in main lite; do
        for e in ours; do
          for ps in 0 16777216; do
            prof=""; [ "$r" = 1 ] && prof="-cpuprofile $OUT/prof/large-$srv-$e-$ps"
            run $srv echo large -engine $e -partsize $ps -n 8 -label $srv ${prof:+$prof-echo.cpu}
            run $srv discard large -engine $e -partsize $ps -n 8 -echo=false -label $srv ${prof:+$prof-discard.cpu}
          done
        done
      done
    done ;;
  small)
    for r in $(seq "$RUNS"); do
      for procs in 1 2; do
        for kc in "1 1" "2 2"; do
          set -- $kc
          run main event small -engine ours -procs $procs -sessions $1 -clients $2 -n 300000 -duration 3s
          run main raw small -engine raw -procs $procs -sessions $1 -clients $2 -n 300000 -duration 3s
        done
      done
    done ;;
  esac
done
