#!/usr/bin/env bash
# The many-core run of bidiload: the figures BENCHMARKS.md reports for a
# 16-core host. The servers run on the upper half of the cores and the
# client on the lower half (taskset, where present), each in its own
# process; every result line is followed by the server's CPU time over
# that run. It needs a static build, since the host it was written for
# has no Go toolchain:
#
#   CGO_ENABLED=0 go build -o .cache/dev/bidiload ./internal/cmd/bidiload
#   BIN=.cache/dev/bidiload OUT=/tmp/dev internal/cmd/bidiload/device.sh
#
# SECTIONS picks what runs (audio frame large small, about five minutes
# in all); COLLAPSE=0 skips the baseline's 2,000 sessions on one connection,
# which hangs until the watchdog ends it. Result lines go to
# $OUT/results.txt.
set -uo pipefail
BIN=${BIN:-.cache/dev/bidiload}
OUT=${OUT:-/tmp/bidiload-device}
DUR=${DUR:-10s}
N=${N:-2000}      # audio sessions
NBIG=${NBIG:-4000} # audio sessions, the scale run
SECTIONS=${SECTIONS:-audio frame large small}
COLLAPSE=${COLLAPSE:-1}
hz=$(getconf CLK_TCK)
mkdir -p "$OUT/srv"
ulimit -n 200000 2>/dev/null || ulimit -n 65536 2>/dev/null || true
ncpu=$(nproc)
half=$((ncpu / 2))
client_pin=() server_pin=()
if command -v taskset >/dev/null && [ "$ncpu" -ge 4 ]; then
  client_pin=(taskset -c "0-$((half - 1))")
  server_pin=(taskset -c "$half-$((ncpu - 1))")
fi
echo "# $(uname -a); $ncpu CPUs; client ${client_pin[*]:-unpinned}; server ${server_pin[*]:-unpinned}" | tee "$OUT/results.txt"
grep -m1 'model name' /proc/cpuinfo | tee -a "$OUT/results.txt"
pids=()
declare -A spid
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done' EXIT
start_server() {
  local name=$1; shift
  "${server_pin[@]}" "$BIN" server -dir "$OUT/srv/$name" "$@" >"$OUT/srv/$name.log" 2>&1 &
  pids+=($!)
  spid[$name]=$!
  for _ in $(seq 100); do [ -f "$OUT/srv/$name/raw.url" ] && return; sleep 0.1; done
  echo "server $name did not start" | tee -a "$OUT/results.txt"; exit 1
}
stop_server() { kill -TERM "${spid[$1]}"; wait "${spid[$1]}" 2>/dev/null; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
run() { # run SERVER URLKIND MODE FLAGS...
  local srv=$1 kind=$2 mode=$3; shift 3
  echo "# $(cut -d' ' -f1-3 /proc/loadavg) $mode $*" >>"$OUT/results.txt"
  local t0; t0=$(cpu_ticks "${spid[$srv]}")
  timeout 90 "${client_pin[@]}" "$BIN" "$mode" -url "$(cat "$OUT/srv/$srv/$kind.url")" \
    -cafile "$OUT/srv/$srv/ca.pem" -dumpdir "$OUT" -timeout 80s "$@" 2>>"$OUT/client.log" |
    tee -a "$OUT/results.txt"
  awk -v a="$t0" -v b="$(cpu_ticks "${spid[$srv]}")" -v hz="$hz" -v s="$srv" \
    'BEGIN { printf "server %s cpu_s=%.2f\n", s, (b - a) / hz }' | tee -a "$OUT/results.txt"
}
start_server main -streams 100000
start_server lite -streams 100000 -verify=false

case " $SECTIONS " in *" audio "*)
# Real-time audio: the harness alone; both engines at 500 sessions; ours
# at $N over the default pool and on one connection (with a server of
# its own, profiled); the baseline on one connection; ours at $NBIG.
run lite echo audio -engine none -n $N -duration "$DUR" -label harness-floor
for e in ours; do
  run lite echo audio -engine $e -n 500 -duration "$DUR" -label pool
done
run lite echo audio -engine ours -n $N -duration "$DUR" -label pool
start_server oneconn -streams 100000 -verify=false -cpuprofile "$OUT/server-one-conn.cpu"
run oneconn echo audio -engine ours -n $N -cap $N -duration "$DUR" -label one-conn \
  -cpuprofile "$OUT/audio-ours-one-conn.cpu"
stop_server oneconn
run lite echo audio -engine ours -n $NBIG -duration "$DUR" -label pool \
  -cpuprofile "$OUT/audio-ours-scale.cpu"
;; esac

case " $SECTIONS " in *" frame "*)
# The same against FrameEcho (internal/echoserver: an HTTP/2 echo on the
# Framer, without net/http's per-connection goroutine), so that one
# connection's limit is the client's: both engines at 500 sessions, ours
# at $N on one connection (twice, profiled once) and over the default
# pool, the baseline at $N on one connection.
for e in ours; do
  run lite frame audio -engine $e -n 500 -duration "$DUR" -label frame-pool
done
run lite frame audio -engine ours -n $N -cap $N -duration "$DUR" -label frame-one-conn \
  -cpuprofile "$OUT/audio-ours-frame-one-conn.cpu"
run lite frame audio -engine ours -n $N -cap $N -duration "$DUR" -label frame-one-conn
run lite frame audio -engine ours -n $N -duration "$DUR" -label frame-pool
;; esac

case " $SECTIONS " in *" large "*)
# Large messages: one session, 16 MiB, echoed and one-way.
for srv in lite; do
  for e in ours; do
    run $srv echo large -engine $e -n 8 -label $srv
    run $srv discard large -engine $e -n 8 -echo=false -label $srv
  done
done
;; esac

case " $SECTIONS " in *" small "*)
# Small messages: msgs/s as GOMAXPROCS and connections grow.
for procs in 1 2 4 8; do
  for e in ours raw; do
    kind=event; [ $e = raw ] && kind=raw
    run main $kind small -engine $e -procs $procs -sessions $procs -clients $procs -n 1000000 -duration 2s
  done
done
;; esac
