#!/usr/bin/env bash
# MariaDB from Debian's packages: the real binlog source of the end-to-end tests (DESIGN.md
# "Real parts"), and Percona Toolkit, whose pt-online-schema-change the online schema change
# test runs against it. Installs the binaries only; tests start their own private instance (own
# port, own data directory) and never touch a system service. No-op when both are installed.
set -euo pipefail
missing=()
command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] || missing+=(mariadb-server mariadb-client)
command -v pt-online-schema-change >/dev/null 2>&1 || missing+=(percona-toolkit)
[ ${#missing[@]} -eq 0 ] && exit 0
[ "$(id -u)" = 0 ] || { echo "install_mariadb.sh: run as root or install ${missing[*]} yourself" >&2; exit 1; }
echo "install_mariadb.sh: installing ${missing[*]} from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The package may start a system instance; the tests use their own, so stop it.
(service mariadb stop || true) >/dev/null 2>&1
