#!/bin/sh
# Modules do not link libtether.so, and still load in every host
# (meson.build, "Modules do not link libtether.so"; docs/ARCHITECTURE.md).
#
# run.sh BUILD_ROOT HOST_LINKED HOST_DLOPEN
#   1. no module in BUILD_ROOT names libtether in NEEDED, nor has a RUNPATH;
#   2. the tether binary loads every backend module (tether backends --json)
#      and, in a git dataset, tether-vcs-git.so without mapping libtether.so;
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
for kind in git icechunk lance; do
	echo "$kinds" | grep -q "\"kind\": *\"$kind\"" || fail "tether backends does not list $kind: $kinds"
done

# A git dataset: init and status load tether-vcs-git.so into the tether
# binary, which must not map libtether.so beside its own copy.
work=$(mktemp -d) || exit 1
trap 'rm -rf "$work"' EXIT
(cd "$work" && git init -q && git -c user.email=t@example.com -c user.name=t commit -q --allow-empty -m start) ||
	fail "cannot make a git repository in $work"
(cd "$work" && "$build/tether" init >/dev/null) || fail "tether init failed in a git repository"
loaded=$(cd "$work" && LD_DEBUG=files "$build/tether" status 2>&1 >/dev/null)
echo "$loaded" | grep -q 'file=[^ ]*tether-vcs-git\.so' || fail "tether status loaded no tether-vcs-git.so"
echo "$loaded" | grep -q 'file=[^ ]*libtether\.so' && fail "tether status mapped libtether.so beside its own copy"

"$host_linked" $modules || fail "a host linked with libtether.so cannot load the modules"
"$host_dlopen" "$build/libtether.so" || fail "libtether.so opened RTLD_LOCAL cannot load modules"

[ $status = 0 ] && echo "modules: no libtether.so in NEEDED, no RUNPATH; loaded by tether, a linked host and a dlopening host"
exit $status
