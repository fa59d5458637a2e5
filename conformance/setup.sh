#!/bin/sh
# Installs the conformance suite's Node packages (the published @ag-ui/client
# and @ag-ui/core releases it drives) exactly as package-lock.json pins them.
# Runs `npm ci` only when node_modules is missing or older than the lock file.
set -eu
cd "$(dirname "$0")"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	# A machine without Node.js: install Debian's when we may (CI runs as root).
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "conformance/setup.sh: node and npm (Node.js 18+) are required" >&2
	exit 1
fi
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ -d node_modules/client-1.0.0 ]; then
	exit 0
fi
npm ci --no-audit --no-fund
