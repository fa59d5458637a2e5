#!/bin/sh
# Installs the conformance suite's Node packages (the published @ag-ui/client
# and @ag-ui/core releases it drives) exactly as package-lock.json pins them.
# Runs `npm ci` only when node_modules is missing or older than the lock file.
set -eu
cd "$(dirname "$0")"
exec ../scripts/npm-ci.sh . client-1.0.0
