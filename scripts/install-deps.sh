#!/bin/sh
# install-deps.sh - install the Debian packages that tiercache's build, tests and tools
# need, if any is missing.
#
# Fast and silent when everything is installed (one dpkg-query); otherwise runs
# `apt-get update` and installs only the missing packages.  Runs apt as root, or through
# sudo when started by another user.  Exits non-zero with a message on any failure.
# Called by the Makefile (only when its stamp is older than this script) and usable
# by hand: sh scripts/install-deps.sh
set -eu

# Build: compiler, meson/ninja, and the libraries libtiercache links.
BUILD_PKGS="build-essential meson ninja-build pkg-config
	liburing-dev libxxhash-dev libjson-c-dev libcmocka-dev libblkid-dev libinih-dev libisal-dev
	librbd-dev libmicrohttpd-dev"
# Tests and tools: fio and NBD clients for integration tests, nbdkit for the server,
# qemu-img/qemu-io, gnuplot for benchmark plots, compression libraries for traces,
# groff and man to render the manual pages (the build makes them with python3);
# clang for the libFuzzer targets of `make fuzz` (the corpus replay of `make check` is
# built with the usual compiler).  ceph-mon, ceph-osd and ceph-common run the throwaway
# single-node Ceph cluster of the RBD tests (tests/integration/ceph-cluster.sh).
# python3-prometheus-client, python3-pil and chromium check `serve --http`'s metrics and
# status page (tests/integration/test-http.sh).
TOOL_PKGS="clang fio nbdkit nbdkit-plugin-dev libnbd-bin libnbd-dev qemu-utils gnuplot-nox
	zlib1g-dev libbz2-dev liblzma-dev libzstd-dev python3-libnbd e2fsprogs
	python3 groff-base man-db ceph-mon ceph-osd ceph-common
	python3-prometheus-client python3-pil chromium"

die() {
	echo "install-deps: error: $*" >&2
	exit 1
}

command -v dpkg-query >/dev/null 2>&1 ||
	die "dpkg-query not found: this script supports Debian 12 (or a derivative) only; install by hand: $BUILD_PKGS $TOOL_PKGS"

missing=""
for pkg in $BUILD_PKGS $TOOL_PKGS; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	case "$status" in
	ii*) ;;
	*) missing="$missing $pkg" ;;
	esac
done

[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing" >&2

if [ "$(id -u)" -eq 0 ]; then
	as_root=""
elif command -v sudo >/dev/null 2>&1; then
	as_root="sudo"
else
	die "not root and sudo is not available; as root run: apt-get install$missing"
fi

# shellcheck disable=SC2086  # word splitting of $as_root and $missing is intended
$as_root env DEBIAN_FRONTEND=noninteractive apt-get -q update ||
	die "apt-get update failed"
# shellcheck disable=SC2086
$as_root env DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends $missing </dev/null ||
	die "apt-get install failed for:$missing"

# Check again: apt can succeed without installing what was asked (e.g. held packages).
still=""
for pkg in $missing; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
	case "$status" in
	ii*) ;;
	*) still="$still $pkg" ;;
	esac
done
[ -z "$still" ] || die "still not installed after apt-get:$still"
echo "install-deps: done" >&2
