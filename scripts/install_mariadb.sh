#!/usr/bin/env bash
# MariaDB from Debian's packages: the real binlog source of the end-to-end tests (DESIGN.md
# "Real parts"). Installs the server binaries only; tests start their own private instance
# (own port, own data directory) and never touch a system service. No-op when installed.
set -euo pipefail
if command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; then exit 0; fi
[ "$(id -u)" = 0 ] || { echo "install_mariadb.sh: run as root or install mariadb-server yourself" >&2; exit 1; }
echo "install_mariadb.sh: installing mariadb-server from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends mariadb-server mariadb-client >/dev/null
# The package may start a system instance; the tests use their own, so stop it.
(service mariadb stop || true) >/dev/null 2>&1
