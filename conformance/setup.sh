#!/bin/sh
# Installs what the conformance suite needs: Debian's nginx and haproxy
# (as root, through apt-get, when one is missing), the real proxies of
# TestKeepAlivesThroughNginx, TestBodyLimitResponsesReachTheConsumer and
# TestConsumerGoneBehindProxies, which start their own on loopback ports; and
# the Node packages (the published @ag-ui/client and @ag-ui/core releases
# the suite drives) exactly as package-lock.json pins them, running
# `npm ci` only when node_modules is missing or older than the lock file.
set -eu
cd "$(dirname "$0")"
nginx=${NGINX:-/usr/sbin/nginx}
haproxy=${HAPROXY:-/usr/sbin/haproxy}
missing=
[ -x "$nginx" ] || missing="nginx-light"
[ -x "$haproxy" ] || missing="$missing haproxy"
if [ -n "$missing" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "conformance/setup.sh: installing Debian's $missing" >&2
	apt-get update -qq
	# Installed to be run by the test, not as a service: none is started.
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d.agui-relay
	chmod +x /usr/sbin/policy-rc.d.agui-relay
	[ -e /usr/sbin/policy-rc.d ] || ln -s policy-rc.d.agui-relay /usr/sbin/policy-rc.d
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
	[ "$(readlink /usr/sbin/policy-rc.d 2>/dev/null)" != policy-rc.d.agui-relay ] || rm -f /usr/sbin/policy-rc.d
	rm -f /usr/sbin/policy-rc.d.agui-relay
fi
if [ ! -x "$nginx" ]; then
	echo "conformance/setup.sh: $nginx is missing: install Debian's nginx (apt-get install nginx-light, as root)" >&2
	exit 1
fi
if [ ! -x "$haproxy" ]; then
	echo "conformance/setup.sh: $haproxy is missing: install Debian's haproxy (apt-get install haproxy, as root)" >&2
	exit 1
fi
exec ../scripts/npm-ci.sh . client-1.0.0
