#!/usr/bin/env bash
# Every test: install what is missing, build (Release, with the CLI and the Python extension),
# run ctest and pytest (tests/*/test_*.py), then build again with AddressSanitizer and
# UndefinedBehaviorSanitizer (-O1) and run the C++ tests once more. Every stage runs even when
# an earlier one failed (unless it needs that one's build); the last lines summarize all of them
# and the exit code is non-zero when anything failed.
#
# Environment: SCANC_BUILD_DIR (default build; the builds go to its test/ and asan/),
# SCANC_SKIP_SETUP=1, SCANC_SKIP_ASAN=1, PYTHON, JOBS.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/setup.sh
scanc_setup || { echo "setup failed"; exit 1; }

build_root="$(realpath -m "${SCANC_BUILD_DIR:-build}")"
jobs="${JOBS:-$(nproc)}"
logs="$build_root/logs"
mkdir -p "$logs"
rm -f "$logs"/*.log
summary=()
failed=0
start=$SECONDS

# stage NAME LOG CMD...: runs CMD with its output shown and kept in LOG; records the outcome.
stage() {
    local name="$1" log="$2" t0=$SECONDS rc
    shift 2
    scanc_log "$name"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    local outcome=ok
    [ "$rc" = 0 ] || outcome="FAILED (exit $rc)"
    summary+=("$(printf '%-16s %s (%ds)' "$name:" "$outcome" $((SECONDS - t0)))")
    [ "$rc" = 0 ] || failed=1
    return "$rc"
}

build_tree() {  # build_tree DIR CMAKE_ARGS...
    local dir="$1"
    shift
    cmake -S . -B "$dir" -G Ninja "$@" &&
        cmake --build "$dir" -j "$jobs"
}

release="$build_root/test"
if stage "build" "$logs/build.log" build_tree "$release" -DCMAKE_BUILD_TYPE=Release \
        -DSCANC_BUILD_TESTS=ON -DSCANC_BUILD_CLI=ON -DSCANC_BUILD_PYTHON=ON \
        -DPython_EXECUTABLE="$SCANC_PYTHON"; then
    # -LE cli: the CLI's pytest suites are registered with ctest for `ctest -L cli`, but the
    # pytest stage below runs them already.
    stage "ctest" "$logs/ctest.log" ctest --test-dir "$release" --output-on-failure -j "$jobs" -LE cli
    # The Python package assembled by the build, and the CLI, for the Python tests.
    PYTHONPATH="$release/python${PYTHONPATH:+:$PYTHONPATH}" \
    SCANC_BIN="$release/tools/scanc/scanc" PATH="$release/tools/scanc:$PATH" \
        stage "pytest" "$logs/pytest.log" "$SCANC_PYTHON" -m pytest -q -p no:cacheprovider tests
fi

if [ "${SCANC_SKIP_ASAN:-0}" != 1 ]; then
    asan="$build_root/asan"
    # -g1: line tables and function names, all a sanitizer report needs. The tree is 1.3 GB
    # instead of 2.0; compiler time 789-971 s against 988 s with -g, within this VM's spread.
    if stage "build (asan)" "$logs/build-asan.log" build_tree "$asan" -DCMAKE_BUILD_TYPE=Debug \
            -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" -DSCANC_SANITIZE=address,undefined \
            -DSCANC_BUILD_TESTS=ON -DSCANC_BUILD_CLI=OFF -DSCANC_BUILD_PYTHON=OFF; then
        # The tests that compile every example, every dtype and each group of functions at
        # every float dtype with NVRTC spend their time (~300 s here) in NVRTC itself, which is
        # not instrumented; the Release stage runs them, and the other codegen tests, NVRTC
        # compiles included, run here.
        stage "ctest (asan)" "$logs/ctest-asan.log" ctest --test-dir "$asan" \
            --output-on-failure -j "$jobs" \
            -E 'CudaCodegen\.(Every(Example|Dtype)CompilesWithNvrtc|.*CompileWithNvrtcAtEveryFloatDtype)'
    fi
fi

# The closing lines: each stage, then the runners' own summary lines, last.
scanc_log "summary ($((SECONDS - start))s)"
printf '%s\n' "${summary[@]}"
"$SCANC_PYTHON" - "$logs"/ctest.log "$logs"/pytest.log "$logs"/ctest-asan.log <<'PY'
import os, re, sys
passed = failed = 0
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    lines = [l for l in open(path, errors="replace") if
             re.search(r"tests passed|tests failed out of|\d+ (passed|failed|errors?)\b", l)]
    if not lines:
        continue
    line = lines[-1].strip()
    print(line)
    if m := re.search(r"(\d+) tests failed out of (\d+)", line):
        failed += int(m[1]); passed += int(m[2]) - int(m[1])
    elif m := re.search(r"tests passed out of (\d+)", line):  # ctest when none failed
        passed += int(m[1])
    else:
        counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|errors?)\b", line)}
        passed += counts.get("passed", 0)
        failed += counts.get("failed", 0) + counts.get("error", 0) + counts.get("errors", 0)
print(f"total: {passed} passed, {failed} failed")
PY
exit "$failed"
