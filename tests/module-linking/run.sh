#!/bin/sh
# Modules do not link libtether.so, and still load in every host
# (meson.build, "Modules do not link libtether.so"; docs/ARCHITECTURE.md).
#
# run.sh BUILD_ROOT HOST_LINKED HOST_DLOPEN
#   1. no module in BUILD_ROOT names libtether in NEEDED, nor has a RUNPATH;
#   2. the tether binary loads every backend module (tether backends --json);
#   3. HOST_LINKED, linked against libtether.so, loads every module;
#   4. HOST_DLOPEN, which dlopens libtether.so RTLD_LOCAL, gets the engine
#      to load backend modules.
set -u
build=$1 host_linked=$2 host_dlopen=$3
status=0
fail() { echo "FAIL: $*"; status=1; }

modules=$(ls "$build"/tether-*.so) || { echo "FAIL: no modules in $build"; exit 1; }
for m in $modules; do
	dyn=$(readelf -d "$m") || { fail "readelf cannot read $m"; continue; }
	echo "$dyn" | grep -q 'NEEDED.*\[libtether' && fail "$m names libtether in NEEDED"
	echo "$dyn" | grep -qE '\((RUNPATH|RPATH)\)' && fail "$m has a RUNPATH: $(echo "$dyn" | grep -E 'R(UN)?PATH')"
done

export TETHER_MODULE_PATH="$build"
kinds=$("$build/tether" backends --json) || fail "tether backends failed"
for kind in git icechunk; do
	echo "$kinds" | grep -q "\"kind\": *\"$kind\"" || fail "tether backends does not list $kind: $kinds"
done

"$host_linked" $modules || fail "a host linked with libtether.so cannot load the modules"
"$host_dlopen" "$build/libtether.so" || fail "libtether.so opened RTLD_LOCAL cannot load modules"

[ $status = 0 ] && echo "modules: no libtether.so in NEEDED, no RUNPATH; loaded by tether, a linked host and a dlopening host"
exit $status
