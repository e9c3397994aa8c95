#!/usr/bin/env bash
# Installs what scanc needs to build and test, and nothing that is already there: Debian
# packages through apt-get (skipped when all are installed), Python packages through pip (only
# the missing ones). Sourced by main.sh and test.sh; runnable on its own.
#
# Sets SCANC_PYTHON: the interpreter the build and the tests use. That is $PYTHON or python3,
# unless it is Debian's own Python (PEP 668 forbids pip there): then a virtual environment in
# .venv. SCANC_SKIP_SETUP=1 skips everything but choosing the interpreter.

scanc_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# Debian packages: build tools and the C++ libraries CMake looks for.
scanc_apt_packages=(
    ninja-build g++ git
    libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
    libonnx-dev libprotobuf-dev protobuf-compiler libxbyak-dev
)
# Python packages: pip name and the version wanted ("" = any).
scanc_pip_packages=(
    "numpy=" "nanobind=" "scikit-build-core=" "onnx=" "onnxruntime=" "pytest=" "torch=2.13.0"
    # NVRTC for the CUDA backend's compile-only tests (kernels of every example for sm_90).
    "nvidia-cuda-nvrtc=13.0.88"
    # torch.onnx.export(dynamo=True) of the lowered PyTorch programs (tests/torch).
    "onnxscript="
    # JAX arrays in and out of Module.run through DLPack (tests/python/test_py_run_dlpack.py).
    "jax="
)

scanc_log() { printf '\n==> %s\n' "$*"; }

scanc_as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

scanc_setup_apt() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    scanc_log "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    scanc_as_root apt-get update -qq &&
        scanc_as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

scanc_choose_python() {
    local py="${PYTHON:-python3}"
    if ! command -v "$py" >/dev/null; then
        scanc_setup_apt python3 python3-dev python3-pip python3-venv || return 1
        py=python3
    fi
    local managed
    managed="$("$py" -c 'import sys, sysconfig, os
print(int(sys.prefix == sys.base_prefix and
          os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))))')"
    if [ "$managed" = 1 ]; then
        # Debian's Python: build and test in a virtual environment of the project's own.
        if [ ! -x "$scanc_root/.venv/bin/python" ]; then
            [ "${SCANC_SKIP_SETUP:-0}" = 1 ] ||
                scanc_setup_apt python3-dev python3-venv || return 1
            scanc_log "python3 -m venv .venv"
            "$py" -m venv "$scanc_root/.venv" || return 1
        fi
        py="$scanc_root/.venv/bin/python"
    fi
    # The interpreter itself, not a launcher (pyenv's shims re-resolve on every call).
    SCANC_PYTHON="$("$py" -c 'import sys; print(sys.executable)')" || return 1
    export SCANC_PYTHON
}

scanc_setup_pip() {
    local missing
    missing="$("$SCANC_PYTHON" - "${scanc_pip_packages[@]}" <<'EOF'
import sys
from importlib import metadata
for spec in sys.argv[1:]:
    name, want = spec.split("=", 1)
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    # torch reports local builds as 2.13.0+cpu
    if have is None or (want and have.split("+")[0] != want):
        print(f"{name}=={want}" if want else name)
EOF
)" || return 1
    [ -z "$missing" ] && return 0
    # shellcheck disable=SC2086  # one package per word
    scanc_log "pip install" $missing
    "$SCANC_PYTHON" -m pip install -q $missing
}

scanc_setup() {
    if [ "${SCANC_SKIP_SETUP:-0}" != 1 ]; then
        scanc_setup_apt "${scanc_apt_packages[@]}" || return 1
    fi
    scanc_choose_python || return 1
    if [ "${SCANC_SKIP_SETUP:-0}" != 1 ]; then
        # CMake >= 3.24 and Ninja: from pip when the system has none (Debian 12's cmake is 3.25).
        command -v cmake >/dev/null || "$SCANC_PYTHON" -m pip install -q cmake || return 1
        scanc_setup_pip || return 1
    fi
    # Tools pip installed into a virtual environment are on its bin/.
    PATH="$(dirname "$SCANC_PYTHON"):$PATH"
    export PATH
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    scanc_setup
    echo "setup done; python: $SCANC_PYTHON"
fi
