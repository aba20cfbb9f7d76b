#!/bin/bash
# SPDX-License-Identifier: MIT
# Install what is needed, build uroce with AddressSanitizer and UBSan, and
# run the whole test suite (unit, netns, interop), then build again with
# clang and run every libFuzzer target for a fixed, seeded number of inputs
# (suite fuzz). Ends with one line "N passed, N failed, N skipped" over both
# builds, and fails on any skipped test unless UROCE_ALLOW_SKIP=1: a missing
# backend must not shrink CI quietly. Run as root: the netns and interop
# tests create network namespaces, veth pairs, XDP programs and QEMU guests.
#
#   scripts/test.sh [TEST...]    TEST names restrict the gcc build's run
# Environment:
#   UROCE_ALLOW_SKIP=1        skipped tests do not fail the run
#   UROCE_TEST_BUILD=DIR      the sanitizer build (default build-test)
#   UROCE_FUZZ_BUILD=DIR      the clang libFuzzer build (default build-fuzz)
#   UROCE_TEST_FUZZ=0         leave the fuzz build out (reported as skipped)
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${UROCE_TEST_BUILD:-build-test}
FUZZ_BUILD=${UROCE_FUZZ_BUILD:-build-fuzz}
ALLOW_SKIP=${UROCE_ALLOW_SKIP:-0}
SANITIZE=(-Db_sanitize=address,undefined -Dwerror=true)

./scripts/install-deps.sh || { echo "0 passed, 1 failed, 0 skipped"; exit 1; }

# setup DIR ARGS...: configure (or reconfigure) a build directory.
setup() {
	local dir=$1
	shift
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@"
	else
		meson setup "$dir" "$@"
	fi >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; return 1; }
}

logs=()      # testlog.json of each meson test run
errors=0     # stages that failed outside what the logs report
rc=0
netns_before=$(ip netns list 2>/dev/null | awk '{print $1}' | sort)

setup "$BUILD" "${SANITIZE[@]}" && ninja -C "$BUILD" || { echo "FAIL: the build in $BUILD"; errors=$((errors + 1)); }
if [ -f "$BUILD/build.ninja" ] && [ $errors = 0 ]; then
	rm -f "$BUILD/meson-logs/testlog.json"
	# The fuzz suite runs from the clang build below; here it only skips.
	meson test -C "$BUILD" --no-suite fuzz --print-errorlogs --num-processes 2 "$@" || rc=1
	logs+=("$BUILD/meson-logs/testlog.json")
	# Every test deletes the namespaces it made, also when it fails or is
	# killed at its timeout: one left behind is a failure of its own.
	leaked=$(comm -13 <(echo "$netns_before") <(ip netns list 2>/dev/null | awk '{print $1}' | sort))
	if [ -n "$leaked" ]; then
		echo "FAIL: network namespaces left behind by the tests:" $leaked
		errors=$((errors + 1))
	fi
fi

fuzz_skipped=
if [ "${UROCE_TEST_FUZZ:-1}" = 0 ]; then
	fuzz_skipped="fuzz: the clang libFuzzer build was left out (UROCE_TEST_FUZZ=0)"
elif CC=clang setup "$FUZZ_BUILD" -Dfuzz=enabled "${SANITIZE[@]}" -Db_lundef=false; then
	rm -f "$FUZZ_BUILD/meson-logs/testlog.json"
	# libFuzzer adds the inputs it finds to the scratch corpus folders;
	# empty them so every run starts from the checked-in corpus alone.
	find "$FUZZ_BUILD/tests/fuzz" -mindepth 2 -path '*-scratch/*' -delete 2>/dev/null
	# meson test builds only what the fuzz tests need, not the whole tree.
	meson test -C "$FUZZ_BUILD" --suite fuzz --print-errorlogs --num-processes 2 || rc=1
	logs+=("$FUZZ_BUILD/meson-logs/testlog.json")
else
	echo "FAIL: cannot configure the clang libFuzzer build in $FUZZ_BUILD"
	errors=$((errors + 1))
fi

# Count from meson's machine-readable logs (one JSON object per test); list
# every skipped test with the reason it printed.
python3 - "$errors" "$ALLOW_SKIP" "$fuzz_skipped" "$rc" "${logs[@]}" <<'EOF'
import json, sys

errors, allow_skip, extra_skip = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
meson_rc, logs = int(sys.argv[4]), sys.argv[5:]
passed = failed = 0
skips = [extra_skip] if extra_skip else []
for path in logs:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        print(f"FAIL: {path} is missing: meson test did not run")
        failed += 1
        continue
    for line in lines:
        try:
            t = json.loads(line)
            result = t["result"]
        except (ValueError, KeyError, TypeError):
            # a line cut short (meson killed) or not a test's record
            print(f"FAIL: {path}: unreadable record {line[:80]!r}")
            failed += 1
            continue
        if result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            out = [l for l in (t.get("stdout") or "").splitlines() if l.strip()]
            why = next((l for l in reversed(out) if "SKIP" in l), out[-1] if out else "no reason printed")
            skips.append(f"{t['name']}: {why.strip()}")
        else:
            failed += 1
failed += errors
if meson_rc and not failed:
    # meson said something failed that no record shows (no test matched,
    # or it stopped before writing): not a pass
    print("FAIL: meson test exited non-zero, yet the logs show no failed test")
    failed += 1
for s in skips:
    print(f"skipped: {s}")
if skips and not allow_skip:
    print(f"FAIL: {len(skips)} skipped, counted as failed below "
          "(a skip is a test that did not run; UROCE_ALLOW_SKIP=1 allows skips)")
    failed, shown_skipped = failed + len(skips), 0
else:
    shown_skipped = len(skips)
print(f"{passed} passed, {failed} failed, {shown_skipped} skipped")
sys.exit(1 if failed else 0)
EOF
count_rc=$?
[ $rc = 0 ] && [ $count_rc = 0 ]
