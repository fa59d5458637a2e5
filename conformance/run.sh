#!/bin/sh
# Runs the conformance suite and prints its verdict lines: one line per pair
# (PASS / FAIL / NOT-SERVED / REFUSED-IN-PART), the corpus counts and the
# final "N passed, N failed". Exits with go test's status, so CI fails on any
# regression. Extra arguments go to go test (e.g. -run TestMatrix).
set -u
cd "$(dirname "$0")"
./setup.sh || exit 1
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -tags integration -count=1 -v "$@" . >"$log" 2>&1
status=$?
grep -E '^(PASS consumer|FAIL consumer|NOT-SERVED|REFUSED-IN-PART|corpus:|[0-9]+ (passed|pairs)|panic|FAIL	|ok	|\s+[a-z_]+_test\.go:[0-9]+: conformance suite cannot run)' "$log"
if [ "$status" -ne 0 ] && ! grep -qE '^FAIL consumer' "$log"; then
	cat "$log" # a failure that is not a pair (build, setup, panic): show everything
fi
exit "$status"
