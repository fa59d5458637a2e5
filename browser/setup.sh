#!/bin/sh
# Installs what the browser test needs: Debian's Chromium (as root, through
# apt-get, when it is missing) and the Node packages pinned by
# package-lock.json (the @ag-ui/client releases the page is bundled from,
# esbuild, playwright-core). Runs `npm ci` only when node_modules is missing
# or older than the lock file.
set -eu
cd "$(dirname "$0")"
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		echo "browser/setup.sh: installing Debian's chromium" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
	fi
fi
if [ ! -x "$chromium" ]; then
	echo "browser/setup.sh: $chromium is missing: install Debian's chromium (apt-get install chromium, as root)" >&2
	exit 1
fi
exec ../scripts/npm-ci.sh . playwright-core
