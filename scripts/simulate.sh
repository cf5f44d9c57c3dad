#!/usr/bin/env bash
# Strata on simulated clusters: StarPU's SimGrid mode with StarPU-MPI over
# SMPI, the real scheduler and the real tasks on a simulated platform
# (docs/scaling.md).
#   scripts/simulate.sh build
#       the SimGrid StarPU (scripts/build-starpu.sh --simgrid) and Strata
#       against it, static, in build-simgrid (STRATA_SIM_BUILD_DIR)
#   scripts/simulate.sh run [-p vm|cluster] [-n RANKS] [-c CPUS] PROGRAM [ARGS]
#       PROGRAM of build-simgrid (tools/strata, bench/bench_gindexer, ...) on
#       RANKS simulated ranks, one per node, each with CPUS workers (1);
#       SimGrid's own messages go to $STRATA_SIM_LOG (simulate.log), from the
#       level $STRATA_SIM_LOGLEVEL (critical; info shows platform errors)
#   scripts/simulate.sh prepare
#       (root; `validate` and `scaling` run it) stop this virtual machine from
#       handing freed memory back to its host, and back every free page once
#   scripts/simulate.sh validate [-o DIR] [-r RUNS] [-n 1,2,4]
#       (after `build`, as scaling) measured against simulated on 1, 2 and 4 ranks: the inference cycle
#       and the global indexer's Take and Put; DIR/validation.json and
#       DIR/validation.png (simulate/)
#   scripts/simulate.sh scaling [-o DIR] [-m MAX_RANKS] [--max-ranks-infer N] [--max-ranks-8x N]
#                               [--max-ranks-weak N] [--max-ranks-mesh N] [--only STUDY,...]
#                               [--host-clock]
#       weak and strong scaling on the cluster platform, DIR/scaling.json and
#       DIR/scaling.png (scripts/simulate_studies.py says what each measures;
#       --host-clock charges the main threads' host time there too);
#       `plot -o DIR` draws DIR/scaling.png again from DIR/scaling.json (and
#       DIR/validation.png from DIR/validation.json when there is one);
#       `--durations model` (validate, scaling) as STRATA_SIM_DURATIONS below;
#       `validate --durations model --models paired`: each measured run after
#       a recording of its own benchmark's models, which its simulated run uses
#   scripts/simulate.sh calibrate [-o DIR] [-r ROUNDS] [-w WORKLOADS]
#       the performance models of the studies' and the validation's tasks, recorded on real runs of
#       build/ (STRATA_BUILD_DIR) on 1 and 2 ranks with STARPU_CALIBRATE, into
#       DIR (scripts/simulate-models, kept in the repository): all pooled, and
#       those of N ranks alone in DIR/ranks-N (the `vm` platform's); or those
#       of the workloads in the file WORKLOADS (RANKS PROGRAM ARGS a line)
# Platforms: `vm` is this machine's kind (Open MPI's shared memory: 0.7 us,
# 8 GB/s, ping-pong of 1 to 16 MiB), its cores ($STRATA_SIM_VM_CORES, nproc)
# shared by every rank's threads (4 ranks on 2 cores compute at half speed
# while all four are busy), each StarPU-MPI message charging its sender the
# CPU time this machine's Open MPI takes to copy it on those cores
# ($STRATA_SIM_MPI_SECONDS_PER_BYTE, 3.7e-10; 0: none); `cluster` nodes of 2 x 32 cores on a two-level
# fat tree of 200 Gb/s links (25 GB/s, 1 us), CPU only: no CUDA performance has been
# measured for the simulated nodes yet.
# A simulated task runs for real and lasts, in the simulation, the thread
# time it took here; so the problem of every simulated rank is computed on
# this machine, and the memory of every rank is held at once. On the `vm`
# platform a rank's main thread is charged its time on the host too
# (submitting, reading results, planning), by the host clock preloaded into
# the simulation (scripts/simgrid-host-clock.c): simulations, like
# benchmarks, then want an otherwise idle machine. Not on `cluster` by
# default: there every simulated rank's data shares this one core's caches,
# where each real node has its own, and the clock charges the misses
# (docs/scaling.md). STRATA_SIM_HOST_CLOCK=1 or 0 sets it either way.
# STRATA_SIM_DURATIONS=model: a task still runs for real, for its results,
# but lasts its performance model's mean (STRATA_SIM_MODELS, default
# scripts/simulate-models) where the model has its footprint, so that no
# rank's task carries this machine's noise (the patched StarPU prints how
# many tasks it found a model for into the log).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${STRATA_SIM_BUILD_DIR:-$root/build-simgrid}
log() { echo "simulate: $*" >&2; }
# The `vm` platform's one host of this machine's cores, where the patched
# StarPU (scripts/patches/starpu-1.4-simgrid) computes every rank's CPU tasks
# when STRATA_SIMGRID_CPU_HOST names it.
vm_cpus=vm-cpus

starpu_env() { eval "$(bash "$root/scripts/build-starpu.sh" --simgrid | tail -n 3)"; }

cmd_build() {
  starpu_env
  command -v smpicc >/dev/null || { log "smpicc missing (libsimgrid-dev)"; exit 1; }
  if [ ! -f "$build/CMakeCache.txt" ]; then
    CC=smpicc cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=OFF \
      -DBUILD_TESTING=OFF >"$build.configure.log" 2>&1 ||
      { tail -n 20 "$build.configure.log" >&2; exit 1; }
  fi
  # A build directory configured before the SimGrid prefix had p4est looks
  # for it again.
  if grep -q '^P4EST_LIBRARY:FILEPATH=.*NOTFOUND' "$build/CMakeCache.txt"; then
    cmake -UP4EST_INCLUDE_DIR -UP4EST_LIBRARY -USC_LIBRARY "$build" \
      >>"$build.configure.log" 2>&1 || { tail -n 20 "$build.configure.log" >&2; exit 1; }
  fi
  local programs=(tools/strata bench/bench_gindexer bench/bench_infer bench/bench_infer_weak
    examples/p4est_infer)
  local targets=(strata_tool bench_gindexer bench_infer bench_infer_weak p4est_infer)
  cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >/dev/null
  # SMPI writes a copy of the program for every simulated rank and loads it
  # (each rank's own globals); the static StarPU's debug information is 80 %
  # of it: 14 GB of copies at 1024 ranks, held in the page cache, where a
  # simulation wants its memory. The programs keep their symbols.
  for p in "${programs[@]}"; do strip --strip-debug "$build/$p"; done
  local clock_source=$root/scripts/simgrid-host-clock.c
  cc -O2 -Wall -Wextra -shared -fPIC -o "$build/libstrata_host_clock.so" "$clock_source" -ldl
  cc -O2 -Wall -Wextra -DSTRATA_HOST_CLOCK_PROGRAM -rdynamic -o "$build/strata_host_clock" \
    "$clock_source" -lsimgrid -ldl
  log "built $build"
}

# The platform of `ranks` nodes of `cpus` workers: SMPI's network between
# the nodes, and one zone per rank named as StarPU looks its workers up.
platform() {
  local kind=$1 ranks=$2 cpus=$3 net
  case $kind in
    vm) net="bw=\"8GBps\" lat=\"0.7us\" loopback_bw=\"8GBps\" loopback_lat=\"0.1us\"" ;;
    cluster)
      local leaf=$((ranks < 32 ? ranks : 32)) spines=$(((ranks + 31) / 32))
      if [ "$spines" -le 1 ]; then
        net="bw=\"25GBps\" lat=\"1us\" topology=\"FAT_TREE\" topo_parameters=\"1;$leaf;1;1\""
      else
        [ $((ranks % 32)) -eq 0 ] || { log "cluster: ranks above 32 come in multiples of 32"; exit 2; }
        net="bw=\"25GBps\" lat=\"1us\" topology=\"FAT_TREE\" topo_parameters=\"2;32,$spines;1,$spines;1,1\""
      fi
      ;;
    *) log "platform $kind: vm or cluster"; exit 2 ;;
  esac
  echo "<?xml version='1.0'?>"
  echo '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">'
  echo '<platform version="4.1"><zone id="world" routing="None">'
  echo "<cluster id=\"net\" prefix=\"node\" suffix=\"\" radical=\"0-$((ranks - 1))\" speed=\"1Gf\" $net/>"
  [ "$kind" != vm ] ||
    echo "<zone id=\"vm\" routing=\"Full\"><host id=\"$vm_cpus\" speed=\"2Gf\" core=\"${STRATA_SIM_VM_CORES:-$(nproc)}\"/></zone>"
  for ((i = 0; i < ranks; i++)); do
    echo "<zone id=\"StarPU-MPI$i\" routing=\"Full\"><host id=\"StarPU-MPI$i-MAIN\" speed=\"1f\"/>"
    for ((c = 0; c < cpus; c++)); do echo "<host id=\"StarPU-MPI$i-CPU$c\" speed=\"2Gf\"/>"; done
    echo "<host id=\"StarPU-MPI$i-RAM\" speed=\"1f\"/></zone>"
  done
  echo '</zone></platform>'
}

# StarPU's bus description of a simulated node (CPU only: one memory node),
# which a simulation reads instead of measuring the bus.
bus_files() {
  local dir=$1/.starpu/sampling/bus cpus=$2 matrix
  mkdir -p "$dir"
  printf '# GPU\tNUMA0\t\n' >"$dir/simulated.affinity"
  printf '# Current configuration\n%d # Number of CPUs\n1 # Number of NUMA nodes\n' "$cpus" >"$dir/simulated.config"
  printf '0 # Number of %s\n' "CUDA devices" "OpenCL devices" "MIC devices" "MPI devices" >>"$dir/simulated.config"
  matrix=$(python3 -c 'n = 16
print("# " + "".join(f"to {j}\t\t" for j in range(n)))
for i in range(n):
    print("\t".join("0.000000e+00" if i == j == 0 else "nan" for j in range(n)))')
  echo "$matrix" | tee "$dir/simulated.bandwidth" >"$dir/simulated.latency"
}

cmd_run() {
  local kind=vm ranks=1 cpus=1
  while [ $# -gt 0 ]; do
    case $1 in
      -p) kind=$2; shift 2 ;;
      -n) ranks=$2; shift 2 ;;
      -c) cpus=$2; shift 2 ;;
      *) break ;;
    esac
  done
  [ $# -ge 1 ] || { log "run: no program"; exit 2; }
  local prog=$1
  shift
  [[ $prog = /* ]] || prog=$build/$prog
  [ -x "$prog" ] || { log "$prog not built (scripts/simulate.sh build)"; exit 1; }
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-sim.XXXXXX")
  platform "$kind" "$ranks" "$cpus" >"$dir/platform.xml"
  bus_files "$dir" "$cpus"
  for ((i = 0; i < ranks; i++)); do echo "node$i"; done >"$dir/hosts"
  # STRATA_SIM_DURATIONS=model: a task lasts its performance model's mean
  # (`calibrate`) instead of the thread time it took here, where the model
  # has its footprint. On `vm`, whose ranks share this machine, the models
  # of the most ranks up to these that were calibrated sharing it (ranks-N),
  # where there are such.
  local durations=${STRATA_SIM_DURATIONS:-measured}
  case $durations in
    measured) ;;
    model)
      local models=${STRATA_SIM_MODELS:-$root/scripts/simulate-models} n
      if [ "$kind" = vm ]; then
        for ((n = ranks; n >= 1; n--)); do
          [ ! -d "$models/ranks-$n" ] || { models=$models/ranks-$n; break; }
        done
      fi
      compgen -G "$models/*.simulated" >/dev/null ||
        { log "no models in $models (scripts/simulate.sh calibrate)"; exit 1; }
      mkdir -p "$dir/.starpu/sampling/codelets/45"
      cp "$models"/*.simulated "$dir/.starpu/sampling/codelets/45/"
      ;;
    *) log "STRATA_SIM_DURATIONS: measured or model, not $durations"; exit 2 ;;
  esac
  local shared='' per_byte=''
  [ "$kind" != vm ] || shared=$vm_cpus
  # On `vm` a StarPU-MPI message charges its sender the CPU time this
  # machine's Open MPI spends on it (a patch of the simulation's StarPU): a
  # rank's progress thread took 0.6-0.9 ms per Take of 2 MB messages on 2
  # ranks, 1.0-1.4 ms per 3 MB on 4, on the core its worker needs (per-thread
  # CPU, 2026-12-07). SMPI's messages take none; a cluster's network has
  # its own engines.
  [ "$kind" != vm ] || per_byte=${STRATA_SIM_MPI_SECONDS_PER_BYTE:-3.7e-10}
  # The host clock charges the main threads' time on the host (above), less
  # what a simcall costs a simulated thread beyond its operation, measured
  # on this machine for each run; without it only tasks take simulated time.
  local clock=$build/libstrata_host_clock.so switch_ns=${STRATA_HOST_CLOCK_SWITCH_NS:-}
  local charge_host=0
  [ "$kind" != vm ] || charge_host=1
  [ "${STRATA_SIM_HOST_CLOCK:-$charge_host}" = 1 ] || clock=
  if [ -n "$clock" ]; then
    [ -f "$clock" ] || { log "$clock not built (scripts/simulate.sh build)"; exit 1; }
    [ -n "$switch_ns" ] || switch_ns=$("$build/strata_host_clock" calibrate "$dir/platform.xml" node0 \
      --log=root.thres:critical 2>>"${STRATA_SIM_LOG:-simulate.log}")
  fi
  local stack
  stack=$(ulimit -s)
  [ "$stack" != unlimited ] || stack=8192
  local ret=0
  # (StarPU 1.4 reads its models and bus files under $XDG_CACHE_HOME first.)
  env -u XDG_CACHE_HOME STARPU_NCPU="$cpus" STARPU_NCUDA=0 STARPU_NOPENCL=0 STARPU_SILENT=1 STARPU_HOME="$dir" \
    STARPU_HOSTNAME=simulated OPENBLAS_NUM_THREADS=1 ${shared:+STRATA_SIMGRID_CPU_HOST=$shared} \
    STRATA_SIMGRID_DURATIONS="$durations" ${per_byte:+STRATA_SIMGRID_MPI_SECONDS_PER_BYTE=$per_byte} \
    ${clock:+LD_PRELOAD=$clock STRATA_HOST_CLOCK_SWITCH_NS=$switch_ns} \
    smpirun -platform "$dir/platform.xml" -hostfile "$dir/hosts" -np "$ranks" "$prog" "$@" \
    --cfg=smpi/privatization:yes --cfg=smpi/simulate-computation:no \
    --cfg=contexts/stack-size:"$stack" --log=root.thres:"${STRATA_SIM_LOGLEVEL:-critical}" \
    2>>"${STRATA_SIM_LOG:-simulate.log}" || ret=$?
  rm -rf "$dir"
  return $ret
}

# A virtual machine that hands freed memory back to its host (Linux's free
# page reporting, on in Firecracker guests like this one) makes the next
# first touch of a page cost what the host takes to back it again: 16 us a
# 4 KiB page here against 1.4 us for a page the guest had. A simulated task
# lasts the thread time it took, so the first runs of a model on hundreds of
# simulated ranks, each faulting its scratch in, took 70-90 ms instead of
# 5-19 (docs/scaling.md). `prepare` stops the reporting (an order above the
# largest block) and backs every free page once; root only, and it holds
# until the machine restarts. The studies run it where they can.
# It also stops DAMON's kernel threads (their proactive `pageout` of cold
# memory, on in these guests): with them, pages of the simulation's program
# and data were reclaimed between runs and faulted back in by tasks, and the
# simulated 4-rank Take ranged over 12-68 ms instead of 7.2-8.2 (measured
# 7.9-60 ms instead of 6.9-11.2; docs/scaling.md).
cmd_prepare() {
  stop_damon
  local order=/sys/module/page_reporting/parameters/page_reporting_order
  if [ ! -e "$order" ]; then
    log "prepare: no free page reporting on this machine"
    return 0
  fi
  # Once reporting is off, the pages backed stay backed until the machine
  # restarts: a second `prepare` has nothing to do (and must not take the
  # memory of a simulation running beside it).
  if [ "$(cat "$order")" -gt 10 ]; then
    log "prepare: free page reporting already off ($order $(cat "$order"))"
    return 0
  fi
  if ! { echo 11 >"$order"; } 2>/dev/null; then
    log "prepare: free page reporting is on and $order is not writable (root?):" \
      "first touches of memory will cost what the host takes to back them"
    return 0
  fi
  log "prepare: free page reporting off ($order 11)"
  python3 - <<'PY'
import time
avail = next(int(l.split()[1]) for l in open("/proc/meminfo") if l.startswith("MemAvailable")) * 1024
n = max(avail - (1 << 30), 0)  # every free page but 1 GiB, touched once
t = time.monotonic()
b = bytearray(n)
b[::4096] = b"\x01" * len(range(0, n, 4096))
print(f"simulate: prepare: {n / 2**30:.1f} GiB of free memory backed in {time.monotonic() - t:.0f} s")
PY
}

stop_damon() {
  local state
  for state in /sys/kernel/mm/damon/admin/kdamonds/*/state; do
    { [ -e "$state" ] && [ "$(cat "$state")" = on ]; } || continue
    if { echo off >"$state"; } 2>/dev/null; then
      log "prepare: DAMON stopped (${state%/state})"
    else
      log "prepare: DAMON runs and $state is not writable (root?): it may page memory out under a run"
    fi
  done
}

# Performance models for STRATA_SIM_DURATIONS=model, recorded on real runs
# here (scripts/calibrate.sh, the build in $STRATA_BUILD_DIR, build/) of the
# studies' programs, under the simulated platform's host name.
cmd_calibrate() {
  local out=$root/scripts/simulate-models rounds=10 workloads=''
  while [ $# -gt 0 ]; do
    case $1 in
      -o) out=$2; shift 2 ;;
      -r) rounds=$2; shift 2 ;;
      -w) workloads=$2; shift 2 ;;
      *) log "calibrate: unknown option $1"; exit 2 ;;
    esac
  done
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/strata-calibrate.XXXXXX")
  # The validation's indexer on 4 ranks copies pieces of a quarter of its
  # 10^6 items, which 2 ranks of half as many make without 4 ranks sharing
  # this machine's 2 cores (a task's measured time would include its wait).
  printf '%s\n' "1 bench/bench_infer_weak --quick --rounds $rounds" \
    "1 bench/bench_infer --quick --rounds $((rounds / 3 + 1))" \
    "2 bench/bench_infer_weak --quick --rounds $rounds" \
    "1 bench/bench_infer_weak --rounds $((rounds / 3 + 1))" \
    "2 bench/bench_infer --quick --rounds $((rounds / 3 + 1))" \
    "2 bench/bench_gindexer --quick --rounds $((rounds / 3 + 1))" \
    "1 bench/bench_gindexer --rounds $((rounds / 3 + 1))" \
    "2 bench/bench_gindexer --rounds $((rounds / 3 + 1))" \
    "2 bench/bench_gindexer --items 500000 --rounds $((rounds / 3 + 1))" \
    "2 tools/strata infer --quiet --cycles 3 --png none --hdf5 none" >"$work/workloads"
  [ -z "$workloads" ] || cp "$workloads" "$work/workloads"
  STARPU_HOSTNAME=simulated bash "$root/scripts/calibrate.sh" -r 1 -g -w "$work/workloads" "$work/home"
  rm -rf "$out"
  mkdir -p "$out"
  cp "$work/home/.starpu/sampling/codelets/45"/*.simulated "$out/"
  local set
  for set in "$work/home"/ranks-*; do
    mkdir -p "$out/${set##*/}"
    cp "$set/.starpu/sampling/codelets/45"/*.simulated "$out/${set##*/}/"
  done
  rm -rf "$work"
  log "calibrate: models in $out"
}

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; }

case ${1:-} in
  build) shift; cmd_build "$@" ;;
  run) shift; starpu_env; cmd_run "$@" ;;
  # The studies run build-simgrid's programs: bring them up to date first (a
  # stale build simulated the job of an older commit without a word).
  validate | scaling) cmd_build; cmd_prepare; python3 "$root/scripts/simulate_studies.py" "$@" ;;
  prepare) cmd_prepare ;;
  calibrate) shift; cmd_calibrate "$@" ;;
  plot) starpu_env; python3 "$root/scripts/simulate_studies.py" "$@" ;;
  -h | --help) usage ;;
  *) usage >&2; exit 2 ;;
esac
