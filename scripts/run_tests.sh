#!/usr/bin/env bash
# Runs every test: the C runner (the shared case table on every backend this
# build has, bad input, the API), the dp4a decoder check (CUDA builds), the
# other ctest tests (install, README
# example), and the pytest suite (numpy and gguf-py as independent oracles).
# Ends with one line: "N passed, N failed, N skipped".
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
# The venv made by scripts/bootstrap.sh, or python3 where that has what the tests need.
if [ -z "${PY:-}" ]; then
    PY=.venv/bin/python
    "$PY" -c "import numpy, pytest" >/dev/null 2>&1 || PY=python3
fi
passed=0 failed=0 skipped=0

echo "== C tests ($BUILD/tests/moe-tests) =="
"$BUILD/tests/moe-tests" | tee "$BUILD/moe-tests.log"
rc=${PIPESTATUS[0]}
line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$BUILD/moe-tests.log" | tail -1)
if [ -n "$line" ]; then
    read -r p f s <<<"$(echo "$line" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/')"
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
else
    echo "moe-tests did not finish (exit $rc)"; failed=$((failed + 1))
fi

echo "== dp4a weight decoders ($BUILD/moe-qdot-test, no GPU needed; failures and summary below, every line in $BUILD/moe-qdot-test.log) =="
# Built (and registered with ctest) whenever the CUDA backends are: it must run then.
if ctest --test-dir "$BUILD" -N -R '^moe-qdot-test$' 2>/dev/null | grep -q 'Total Tests: 1'; then
    "$BUILD/moe-qdot-test" | tee "$BUILD/moe-qdot-test.log" | grep -v '^ok '
    rc=${PIPESTATUS[0]}
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$BUILD/moe-qdot-test.log" | tail -1)
    if [ -n "$line" ]; then
        read -r p f s <<<"$(echo "$line" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped.*/\1 \2 \3/')"
        passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    else
        echo "moe-qdot-test did not finish (exit $rc)"; failed=$((failed + 1))
    fi
else
    skipped=$((skipped + 1)); echo "skipped: built without CUDA (moe-qdot-test is a CUDA target)"
fi

echo "== other ctest tests =="
ctest --test-dir "$BUILD" -E '^(moe-tests|moe-qdot-test)$' --output-on-failure | tee "$BUILD/ctest.log"
p=$(grep -cE 'Test +#[0-9]+: .* Passed' "$BUILD/ctest.log")
f=$(grep -cE 'Test +#[0-9]+: .*(Failed|Exception|Timeout|Not Run)' "$BUILD/ctest.log")
s=$(grep -cE 'Test +#[0-9]+: .*Skipped' "$BUILD/ctest.log")
passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))

echo "== Python tests =="
preload=
case "$BUILD" in *-asan) # the interpreter is not instrumented: load the runtimes first
    preload="$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so)"
    export ASAN_OPTIONS=detect_leaks=0 ;;
esac
LD_PRELOAD=$preload MOE_LIB="$PWD/$BUILD/libmoe.so" "$PY" -m pytest tests/python -q -rs --junitxml="$BUILD/pytest.xml"
read -r p f s <<<"$("$PY" - "$BUILD/pytest.xml" <<'PYEOF'
import sys, xml.etree.ElementTree as ET
try:
    r = ET.parse(sys.argv[1]).getroot()
    s = r if r.tag == "testsuite" else r.find("testsuite")
    t, f, e, k = (int(s.get(a, 0)) for a in ("tests", "failures", "errors", "skipped"))
    print(t - f - e - k, f + e, k)
except Exception:
    print(0, 1, 0)
PYEOF
)"
passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))

echo "== GGUF reader fuzzing (libFuzzer + ASan/UBSan, ${MOE_FUZZ_SECONDS:=60} s; MOE_FUZZ_SECONDS=N for longer) =="
if command -v clang >/dev/null 2>&1 && echo 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' |
        clang -x c -fsanitize=fuzzer - -o "$BUILD/fuzz-probe" >/dev/null 2>&1; then
    if MOE_FUZZ_DIR="$PWD/$BUILD/fuzz" PYTHON="$PY" tests/fuzz/run_fuzz.sh "$MOE_FUZZ_SECONDS" > "$BUILD/fuzz-run.log" 2>&1; then
        passed=$((passed + 1)); tail -1 "$BUILD/fuzz-run.log"
    else
        failed=$((failed + 1)); tail -30 "$BUILD/fuzz-run.log"
    fi
else
    skipped=$((skipped + 1)); echo "skipped: clang with libFuzzer is not installed"
fi

echo
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
