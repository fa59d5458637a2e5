#!/bin/sh
# Installs the conformance suite's Node packages (the published @ag-ui/client
# and @ag-ui/core releases it drives) exactly as package-lock.json pins them.
# Runs `npm ci` only when node_modules is missing or older than the lock file.
set -eu
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "conformance/setup.sh: node and npm (Node.js 20+) are required" >&2
	exit 1
fi
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ -d node_modules/client-1.0.0 ]; then
	exit 0
fi
npm ci --no-audit --no-fund
