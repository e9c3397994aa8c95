#!/usr/bin/env bash
# The one GPU script (issue 5): builds the CUDA backend and its tests, runs the differential
# tests against the reference executor (plus compute-sanitizer memcheck and racecheck on the
# small ones), then the benchmark and its peers, and prints the tables last.
#   scripts/gpu.sh [OUTDIR]        (default: build-gpu/results)
# Environment: SKIP_PEERS=1 skips the Python peers; SKIP_SANITIZER=1 skips compute-sanitizer;
# SKIP_TESTS=1 skips the tests (and the sanitizer); SKIP_TORCH=1 skips bench/torch_gpu.py
# (TORCH_ARGS=--checks-only: its checks alone) and the Python GPU tests;
# SWEEP_ONLY="TEXT|TEXT" keeps the sweep cases whose names contain one of the TEXTs;
# SIZES=1 times every case at 4^k elements for the plot (OUTDIR/sizes.csv);
# SWEEP="table rows=128x32,mb=4 ..." adds a tuning sweep whose results are checked (the
# SCANC_CUDA_TUNING overrides of src/backends/cuda/tuning.h); NCU="CASE|KERNEL-REGEX[|TUNING];..."
# profiles one launch of each such sweep case (under TUNING, default the table's) with Nsight
# Compute (stall reasons, occupancy, memory);
# STAMPS="CASE[|TUNING];..." records where each look-back tile's time goes in one launch of the
# sweep case (TUNING plus stamps=1; bench/lookback_stamps.py; records in OUTDIR/stamps-N.bin);
# COMPILE_AB="table scitems=48 ..." times a new process's first compile and run (gpu_bench
# --first-launch sum, affine, sum-1d, affine-1d) under each tuning, interleaved over three rounds
# (OUTDIR/compile_ab.txt); OPTIONS_AB="--Ofast-compile=mid ..." runs the sweep (SWEEP_ONLY applies)
# and new processes' first runs under each SCANC_NVRTC_OPTIONS against none (OUTDIR/options_ab.txt);
# FIRST_LAUNCH_WRAP="CMD" runs the machine's first new process under CMD (e.g. a rusage printer);
# WALK_PROBE="[FEED...]" runs only bench/cols_walk_probe.cu (cols lines walked whole by a warp or a block,
# fed through shared memory; OUTDIR/walk_probe.txt) and exits;
# WIDE_PROBE=1 runs only bench/cols_wide_probe.cu (cols tiles of one warp, V columns a lane;
# OUTDIR/wide_probe.txt) and exits; PIPE_PROBE=1 likewise bench/cols_pipe_probe.cu (cols tiles
# staged in shared memory by bulk tensor copies, persistent blocks; OUTDIR/pipe_probe.txt) and
# REREAD_PROBE=1 bench/cols_reread_probe.cu (two passes, the second reading from L2);
# TWOPASS_PROBE=1 bench/cols_twopass_probe.cu (two passes of independent warps);
# CHAIN_PROBE=1 bench/cols_chain_probe.cu (warp tiles chained by chain warps; CHAIN_PROBE=diag: where line 0's time goes);
# CLUSTER_PROBE=1 bench/cols_cluster_probe.cu (lines walked by clusters, carries through distributed shared memory);
# GTEST_FILTER selects tests, SAN_FILTER the sanitizer's (SAN_FILTER=all: every test that
# launches kernels of a sane size, ~2 min memcheck + ~3 min racecheck), SAN_TOOLS its tools
# (default "memcheck racecheck"), SAN_ARGS more compute-sanitizer flags;
# TEST_TIMEOUT, SAN_TIMEOUT, RANDOM_TIMEOUT,
# SWEEP_TIMEOUT, BENCH_TIMEOUT, PEERS_TIMEOUT, TORCH_TIMEOUT bound the sections. The sanitizer
# runs last, so that a short device lease still brings the numbers back.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=build-gpu
OUT=${1:-$BUILD/results}
mkdir -p "$OUT"
export SCANC_CACHE_DIR=$(mktemp -d /tmp/scanc-cache.XXXX)
# NVRTC 12.9+ also caches its output in the driver's compute cache (~/.nv/ComputeCache): a
# program compiled earlier on this machine then "compiles" in 0.07 s. Compile times here are
# those of a program the machine has never seen.
export CUDA_CACHE_DISABLE=1
log() { echo "== $*"; }
NVCC="nvcc -O3 -std=c++20 -arch=sm_90 -Iinclude"  # bench/*.cu

# A probe: bench/cols_NAME_probe.cu built alone and run with ARGS (OUTDIR/NAME_probe.txt).
probe() {
  local name=$1; shift
  log "cols $name probe (bench/cols_${name}_probe.cu)"
  mkdir -p $BUILD && $NVCC bench/cols_${name}_probe.cu -o $BUILD/cols_${name}_probe || exit 1
  timeout ${BENCH_TIMEOUT:-300} $BUILD/cols_${name}_probe "$@" 2>&1 | tee "$OUT/${name}_probe.txt"
  exit 0
}
[ -n "${WALK_PROBE+x}" ] && probe walk $WALK_PROBE
[ -n "${WIDE_PROBE+x}" ] && probe wide
[ -n "${PIPE_PROBE+x}" ] && probe pipe
[ -n "${REREAD_PROBE+x}" ] && probe reread
[ -n "${TWOPASS_PROBE+x}" ] && probe twopass
[ -n "${CHAIN_PROBE+x}" ] && probe chain $CHAIN_PROBE
[ -n "${CLUSTER_PROBE+x}" ] && probe cluster $CLUSTER_PROBE

log "configure + build (CUDA backend, reference, tests)"
cmake -S . -B $BUILD -G Ninja -DSCANC_ENABLE_CUDA=ON -DSCANC_ENABLE_ONNX=OFF -DSCANC_BUILD_PYTHON=OFF \
      -DSCANC_BUILD_CLI=OFF -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
# The benchmark's CUDA objects compile while ninja builds the libraries.
( $NVCC -c bench/gpu_bench.cu -o $BUILD/gpu_bench.o && $NVCC -c bench/cub_scan.cu -o $BUILD/cub_scan.o ) \
    > "$OUT/nvcc.log" 2>&1 &
NVCC_PID=$!
ninja -C $BUILD -j"$(nproc)" cuda_test scanc_backend_cuda scanc_dsl scanc_text >> "$OUT/build.log" 2>&1 || { grep -B2 -A8 error "$OUT/build.log" | head -60; exit 1; }
wait $NVCC_PID; cat "$OUT/nvcc.log" >> "$OUT/build.log"; rm -f "$OUT/nvcc.log"
$NVCC $BUILD/gpu_bench.o $BUILD/cub_scan.o \
     $BUILD/src/backends/cuda/libscanc_backend_cuda.a $BUILD/src/dsl/libscanc_dsl.a $BUILD/src/text/libscanc_text.a \
     $BUILD/src/runtime/libscanc_runtime.a $BUILD/src/ir/libscanc_ir.a -ldl -o $BUILD/gpu_bench \
     >> "$OUT/build.log" 2>&1 || { grep -A5 error "$OUT/build.log" | head -40; echo "gpu_bench did not build"; }

log "first launch on this machine: a new process, before anything else has loaded NVRTC"
timeout 60 ${FIRST_LAUNCH_WRAP:-} $BUILD/gpu_bench --first-launch 2>&1 | tee "$OUT/first_launch.txt"
rm -rf "$SCANC_CACHE_DIR"/*

TESTS=0
if [ -z "${SKIP_TESTS:-}" ]; then
  log "differential tests (cuda vs reference)"
  # The full log (each test as it ends) shows where a timeout struck; the console gets failures.
  timeout ${TEST_TIMEOUT:-400} stdbuf -oL $BUILD/tests/cuda/cuda_test > "$OUT/tests.log" 2>&1
  TESTS=$?
  [ $TESTS = 124 ] && { echo "tests timed out in:"; tail -3 "$OUT/tests.log"; }
  grep -E "^\[ +(FAILED|SKIPPED) +\]|Failure|PASSED|tests ran" "$OUT/tests.log" | tail -40
  grep -E "^\[ +OK +\]" "$OUT/tests.log" | sort -t'(' -k2 -n -r | head -5
fi

log "benchmark (load average $(cut -d' ' -f1-3 /proc/loadavg); busiest processes below)"
ps -eo pcpu,etime,comm --sort=-pcpu | head -4
rm -rf "$SCANC_CACHE_DIR"/*
timeout ${BENCH_TIMEOUT:-240} $BUILD/gpu_bench "$OUT/bench.md" 2>&1 | tee "$BUILD/bench.log"

if [ -n "${SWEEP:-}" ]; then
  log "tuning sweep"
  timeout ${SWEEP_TIMEOUT:-200} $BUILD/gpu_bench --sweep $SWEEP 2>&1 | tee "$OUT/sweep.md"
fi

if [ -n "${COMPILE_AB:-}" ]; then
  log "first compile A/B: a new process per compile, tunings interleaved"
  for round in 1 2 3; do
    for t in $COMPILE_AB; do
      for p in sum affine sum-1d affine-1d; do
        rm -rf "$SCANC_CACHE_DIR"/*
        if [ "$t" = table ]; then timeout 60 $BUILD/gpu_bench --first-launch $p
        else SCANC_CUDA_TUNING=$t timeout 60 $BUILD/gpu_bench --first-launch $p; fi | sed "s/^/$t: /"
      done
    done
  done | tee "$OUT/compile_ab.txt"
fi

if [ -n "${OPTIONS_AB:-}" ]; then
  log "NVRTC options A/B: the sweep's cases, then new processes' first runs, default and each option interleaved"
  for round in 1 2; do
    for o in "" $OPTIONS_AB; do
      echo "== sweep, options [$o]"
      SCANC_NVRTC_OPTIONS="$o" SCANC_CACHE_DIR=$(mktemp -d) timeout 150 $BUILD/gpu_bench --sweep table 2>&1 | grep "|"
    done
  done | tee "$OUT/options_ab.txt"
  for round in 1 2 3; do
    for o in "" $OPTIONS_AB; do
      for p in affine-1d sum-1d; do
        SCANC_NVRTC_OPTIONS="$o" SCANC_CACHE_DIR=$(mktemp -d) timeout 60 $BUILD/gpu_bench --first-launch $p | sed "s/^/[$o] /"
      done
    done
  done | tee -a "$OUT/options_ab.txt"
fi

if [ -n "${SIZES:-}" ]; then
  log "size sweep (bench/gpu_plot.py OUTDIR/sizes.csv draws it)"
  timeout ${SIZES_TIMEOUT:-150} $BUILD/gpu_bench --sizes "$OUT/sizes.csv" > "$OUT/sizes.log" 2>&1; tail -3 "$OUT/sizes.log"
fi

if [ -n "${NCU:-}" ] && command -v ncu > /dev/null; then
  IFS=";" read -ra NCU_RUNS <<< "$NCU"
  for run in "${NCU_RUNS[@]}"; do
    log "ncu: $run"
    IFS="|" read -r NCU_CASE NCU_KERNEL NCU_TUNING <<< "$run"
    SWEEP_ONLY="$NCU_CASE" timeout ${NCU_TIMEOUT:-150} ncu --clock-control none -k regex:"$NCU_KERNEL" \
        --launch-skip 2 --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
        --metrics "$(printf 'smsp__average_warps_issue_stalled_%s_per_issue_active.ratio,' no_instruction \
            long_scoreboard short_scoreboard barrier wait branch_resolving math_pipe_throttle mio_throttle \
            lg_throttle membar sleeping | sed 's/,$//')" \
        $BUILD/gpu_bench --sweep "${NCU_TUNING:-table}" >> "$OUT/ncu.txt" 2>&1
    grep -vE "^==PROF==|^ *-+ *$" "$OUT/ncu.txt" | grep -E "scanc_|Duration|Throughput|Issued Warp|Eligible Warps|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|Theoretical Occ|Spilling Requests  |stalled" | tail -28
  done
fi

if [ -n "${STAMPS:-}" ]; then
  IFS=";" read -ra STAMP_RUNS <<< "$STAMPS"
  for i in "${!STAMP_RUNS[@]}"; do
    IFS="|" read -r ST_CASE ST_TUNING <<< "${STAMP_RUNS[$i]}"
    log "tile phases: $ST_CASE ${ST_TUNING:-(table)}" | tee -a "$OUT/stamps.txt"
    SCANC_CUDA_STAMPS="$OUT/stamps-$i.bin" SWEEP_ONLY="$ST_CASE" timeout 120 $BUILD/gpu_bench --sweep \
        ${ST_TUNING:-table} ${ST_TUNING:+$ST_TUNING,}stamps=1 2>&1 | grep -v "^|" | grep . | tee -a "$OUT/stamps.txt"
    python3 bench/lookback_stamps.py "$OUT/stamps-$i.bin" 2>&1 | tee -a "$OUT/stamps.txt"
  done
fi

log "first launch: new process, cold then warm disk cache"
rm -rf "$SCANC_CACHE_DIR"/*
timeout 60 $BUILD/gpu_bench --first-launch | tee -a "$OUT/first_launch.txt"
timeout 60 $BUILD/gpu_bench --first-launch | tee -a "$OUT/first_launch.txt"

SAN="skipped"
if [ -z "${SKIP_SANITIZER:-}${SKIP_TESTS:-}" ] && command -v compute-sanitizer > /dev/null; then
  log "compute-sanitizer ${SAN_TOOLS:-memcheck racecheck} on ${SAN_FILTER:-the small cases}"
  F=${SAN_FILTER:-'CudaDifferential.ReverseScansMatch:CudaDifferential.EveryDimOfA3DTensorMatches:CudaDifferential.SlicesConcatAndBroadcastingMatch:CudaVectorRows.BroadcastCoefficientsAndEpiloguesThatReadInputsMatch:CudaGraph.*'}
  SAN=""
  # all: less the NVRTC-only tests (no launch to check) and the 2^31-element one (minutes).
  [ "$F" = all ] && F='-*EveryExampleCompiles*:*EveryDtypeCompiles*:*MoreThan2To31*'
  # The tool checks this process only: a death test's child (a re-run of the test binary) hangs
  # under it when tracked, and runs the same code as the parent's tests (nineteenth session).
  for tool in ${SAN_TOOLS:-memcheck racecheck}; do
    timeout ${SAN_TIMEOUT:-300} compute-sanitizer --tool $tool --error-exitcode 9 \
        ${SAN_ARGS:---target-processes application-only} \
        $BUILD/tests/cuda/cuda_test --gtest_filter="$F" \
        >> "$OUT/sanitizer.log" 2>&1
    rc=$?; SAN="$SAN $tool:$([ $rc = 0 ] && echo clean || echo "rc=$rc")"
    tail -3 "$OUT/sanitizer.log"
  done
fi

if [ -z "${SKIP_PEERS:-}" ]; then
  log "peers (torch, torch.compile, jax)"
  PYTHONUNBUFFERED=1 timeout ${PEERS_TIMEOUT:-420} python3 bench/gpu_peers.py "$OUT/peers.md" --budget ${PEERS_BUDGET:-300} 2>&1 | grep -v Warning | tee "$BUILD/peers.log" | tail -60
fi

if [ -z "${SKIP_TORCH:-}" ]; then
  log "scanc.torch on CUDA (bench/torch_gpu.py): checks, then timings against torch.compile"
  # The image's default compiler links libstdc++ statically, which breaks the extension.
  cmake -S . -B build-gpupy -G Ninja -DCMAKE_CXX_COMPILER=/usr/bin/g++ \
        -DPython_EXECUTABLE="$(command -v python3)" -DCMAKE_BUILD_TYPE=Release -DSCANC_ENABLE_CUDA=ON \
        -DSCANC_ENABLE_ONNX=OFF -DSCANC_BUILD_PYTHON=ON -DSCANC_BUILD_TESTS=OFF -DSCANC_BUILD_CLI=OFF \
        >> "$OUT/build.log" 2>&1 && ninja -C build-gpupy _core >> "$OUT/build.log" 2>&1 &&
  PYTHONPATH=build-gpupy/python PYTHONUNBUFFERED=1 timeout ${TORCH_TIMEOUT:-400} \
      python3 bench/torch_gpu.py "$OUT/torch_gpu.md" ${TORCH_ARGS:-} 2>&1 | grep -v -i warn | tee "$OUT/torch_gpu.log" | tail -30
  # The Python tests that need a GPU (the rest run in CI).
  PYTHONPATH=build-gpupy/python timeout 120 python3 -m pytest -q -p no:cacheprovider -k cuda \
      tests/python/test_py_run_torch.py 2>&1 | tail -3 | tee "$OUT/pytest_gpu.log"
  # Random whole programs on CUDA (and the CPU backend) against the reference; the log keeps
  # the first failure's program and where it differs.
  PYTHONPATH=build-gpupy/python timeout ${RANDOM_TIMEOUT:-300} python3 -m pytest -q -x --tb=short \
      -p no:cacheprovider tests/python/test_random_whole_programs.py 2>&1 | tail -40 > "$OUT/pytest_random.log"
  tail -3 "$OUT/pytest_random.log"
  # JAX and CuPy arrays through DLPack, on the GPU where their arrays live there.
  PYTHONPATH=build-gpupy/python timeout 120 python3 -m pytest -q -p no:cacheprovider \
      tests/python/test_py_run_dlpack.py 2>&1 | tail -3 | tee "$OUT/pytest_dlpack.log"
fi

echo
echo "================ summary ================"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader 2>/dev/null
[ -f "$OUT/tests.log" ] && grep -E "tests|PASSED|FAILED|SKIPPED" "$OUT/tests.log" | tail -6
[ -f "$OUT/tests.log" ] && grep -h "^worst ulps" "$OUT/tests.log"  # CudaMathFunctions' measured errors
echo "sanitizer:$SAN"
cat "$OUT/first_launch.txt"
[ -f "$OUT/compile_ab.txt" ] && cat "$OUT/compile_ab.txt"
[ -f "$OUT/sweep.md" ] && cat "$OUT/sweep.md"
cat "$OUT/bench.md" 2>/dev/null
[ -f "$OUT/peers.md" ] && cat "$OUT/peers.md"
[ -f "$OUT/torch_gpu.log" ] && grep -E "^(PASS|FAIL)" "$OUT/torch_gpu.log"
[ -f "$OUT/pytest_gpu.log" ] && echo "python GPU tests: $(tail -1 "$OUT/pytest_gpu.log")"
[ -f "$OUT/pytest_random.log" ] && echo "random whole programs (CUDA too): $(tail -1 "$OUT/pytest_random.log")" &&
    grep -E "^E " "$OUT/pytest_random.log" | head -12
[ -f "$OUT/pytest_dlpack.log" ] && echo "python JAX/CuPy tests: $(tail -1 "$OUT/pytest_dlpack.log")"
[ -f "$OUT/torch_gpu.md" ] && cat "$OUT/torch_gpu.md"
exit $TESTS
