#!/usr/bin/env bash
# Installs what `make test` and `make bench` need on a fresh Debian/Ubuntu
# machine: the build tools from apt (when missing) and a local Python venv
# (.venv) with numpy, pytest and gguf from PyPI. Where no registry can be
# reached (the GPU machines), the venv sees the system's site-packages
# (torch, numpy, pytest) and nothing is downloaded.
set -u
cd "$(dirname "$0")/.."

need=()
command -v cmake >/dev/null 2>&1 || need+=(cmake)
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
python3 -c "import venv, ensurepip" >/dev/null 2>&1 || need+=(python3-venv)
# Optional: without them a test says "skipped" (pkg-config half of the
# install test; the GGUF fuzzer needs clang with libFuzzer).
want=()
command -v pkg-config >/dev/null 2>&1 || want+=(pkg-config)
command -v clang >/dev/null 2>&1 || want+=(clang)
[ -n "$(ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a 2>/dev/null)" ] || want+=(libclang-rt-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "bootstrap: installing ${need[*]} with apt-get"
        apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "bootstrap: please install: ${need[*]}" >&2
        exit 1
    fi
fi
if [ ${#want[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bootstrap: installing ${want[*]} with apt-get (optional)"
    { timeout 120 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 300 apt-get install -y -qq "${want[@]}"; } >/dev/null 2>&1 ||
        echo "bootstrap: could not install ${want[*]}; the tests that need them will say skipped"
fi

VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv --system-site-packages "$VENV" || { echo "bootstrap: python3 -m venv failed" >&2; exit 1; }
fi
if ! "$VENV/bin/python" -c "import numpy, pytest, gguf" >/dev/null 2>&1; then
    # A closed network answers quickly or times out; either way we go on with
    # what is installed and the tests that need a missing package skip.
    timeout 300 "$VENV/bin/python" -m pip install -q --disable-pip-version-check --retries 1 --timeout 20 \
        numpy pytest gguf >/dev/null 2>&1 || echo "bootstrap: pip install failed (no network?); using installed packages"
fi
if ! "$VENV/bin/python" -c "import numpy, pytest" >/dev/null 2>&1; then
    # A python3 that is itself a virtual environment (the GPU machines' torch
    # venv) does not pass its packages on to .venv: use it directly.
    if python3 -c "import numpy, pytest" >/dev/null 2>&1; then
        echo "bootstrap: using $(command -v python3), which has numpy and pytest"
    else
        echo "bootstrap: numpy and pytest are needed (pip install numpy pytest gguf)" >&2
        exit 1
    fi
fi
exit 0
