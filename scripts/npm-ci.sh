#!/bin/sh
# Usage: scripts/npm-ci.sh DIR MARKER
# Installs the Node packages of DIR exactly as DIR/package-lock.json pins
# them, with Debian's Node.js installed first when the machine has none (the
# tests want Node.js 20 or newer: README.md, What the tests need) and
# we may (as root; CI runs so). Runs `npm ci` only when DIR/node_modules is
# missing, older than the lock file, or lacks DIR/node_modules/MARKER.
set -eu
dir=$1 marker=$2
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		apt-get update -qq && apt-get install -y -qq nodejs npm >/dev/null
	fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "npm-ci.sh ($(cd "$dir" && pwd)): node and npm (Node.js 20 or newer) are required" >&2
	exit 1
fi
cd "$dir"
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ] && [ -d "node_modules/$marker" ]; then
	exit 0
fi
npm ci --no-audit --no-fund
