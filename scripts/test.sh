#!/bin/bash
# Install what is needed, build uroce with AddressSanitizer and UBSan, and
# run the whole test suite (unit, netns, interop). Ends with one line
# "N passed, N failed, N skipped". Run as root: the netns and interop tests
# create network namespaces, veth pairs, XDP programs and QEMU guests.
set -uo pipefail
cd "$(dirname "$0")/.."

BUILD=${UROCE_TEST_BUILD:-build-test}

./scripts/install-deps.sh || { echo "0 passed, 1 failed"; exit 1; }

if [ -d "$BUILD" ]; then
	meson setup --reconfigure "$BUILD" -Db_sanitize=address,undefined -Dwerror=true >"$BUILD.setup.log" 2>&1
else
	meson setup "$BUILD" -Db_sanitize=address,undefined -Dwerror=true >"$BUILD.setup.log" 2>&1
fi || { cat "$BUILD.setup.log"; echo "0 passed, 1 failed"; exit 1; }

ninja -C "$BUILD" || { echo "0 passed, 1 failed"; exit 1; }

meson test -C "$BUILD" --print-errorlogs --num-processes 2 "$@"
rc=$?

# Count from meson's machine-readable log (one JSON object per test).
log="$BUILD/meson-logs/testlog.json"
count() { grep -o "\"result\": \"$1\"" "$log" 2>/dev/null | wc -l; }
passed=$(( $(count OK) + $(count EXPECTEDFAIL) ))
failed=$(( $(count FAIL) + $(count UNEXPECTEDPASS) + $(count TIMEOUT) + $(count ERROR) ))
skipped=$(count SKIP)
[ -f "$log" ] || failed=$((failed + 1))
echo "$passed passed, $failed failed, $skipped skipped"
exit $rc
