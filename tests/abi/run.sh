#!/bin/sh
# The plug-in ABI across versions (docs/BACKENDS.md, "Versions and sizes"),
# with modules built out of tree (cc, nothing of tether's build):
#
#  - dirsnap as it was then (v3/dirsnap.c, tests/external-backend/dirsnap.c at ABI 3) built against the headers of
#    the version 3 layout, kept whole in v3/include (struct tether_backend
#    with `int abi`, struct tether_bctx without version and size), loads and
#    passes the conformance suite, and tether add/commit/verify drive it;
#  - a module claiming a version newer than this tether's is refused, with
#    one line naming both versions and the module's file;
#  - a struct tether_module's init runs once after loading and its shutdown
#    once at exit, and a failing init refuses the module.
#
#   run.sh BUILD_ROOT SOURCE_DIR      (meson test passes both)
set -eu

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tether-abi-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

fail() {
	echo "run.sh: FAIL: $*" >&2
	exit 1
}

PKG_CONFIG_PATH="$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
cflags=$(pkg-config --cflags tether) || fail "pkg-config cannot find tether"
jansson=$(pkg-config --cflags jansson) || fail "pkg-config cannot find jansson"
cc=${CC:-cc}
strict="-std=c17 -Wall -Wextra -Werror"
ext="$src/../external-backend"

mkdir "$work/v3" "$work/future" "$work/hooks"
# shellcheck disable=SC2086 # $cflags, $jansson and $strict are lists of flags
{
	# The example backend as it was in the version 3 days (v3/dirsnap.c,
	# kept as it was then, like the header), built against that header.
	$cc $strict -shared -fPIC -I"$src/v3/include" $jansson \
		"$src/v3/dirsnap.c" -o "$work/v3/tether-backend-dirsnap.so"
	$cc $strict -shared -fPIC "$ext/harness.c" $cflags -o "$work/harness.so"
	$cc $strict -shared -fPIC "$src/future.c" $cflags -o "$work/future/tether-backend-future.so"
	$cc $strict -shared -fPIC "$src/hooks.c" $cflags -o "$work/hooks/tether-backend-hooks.so"
} || fail "the test modules do not build"
grep -q 'int abi;' "$src/v3/include/tether/backend.h" || fail "v3/include is not the version 3 layout"

# ---- a version 3 module works -------------------------------------------
if ! TETHER_MODULE_PATH="$work/v3" "$build/tether-conformance" dirsnap --harness "$work/harness.so" \
	>"$work/v3.out" 2>&1; then
	cat "$work/v3.out"
	fail "dirsnap built against the version 3 header failed the conformance suite"
fi
grep -q '^ok   fork: a stale expect is refused' "$work/v3.out" || { cat "$work/v3.out"; fail "the suite skipped forks"; }
echo "version 3 dirsnap: $(tail -1 "$work/v3.out")"

dataset="$work/dataset"
new_dataset() {
	git init -q "$dataset"
	git -C "$dataset" config user.name "tether tests"
	git -C "$dataset" config user.email "tests@tether.invalid"
}
tether() { # MODULE_DIR ARGS...: run in $dataset with only that module directory
	dir=$1
	shift
	(cd "$dataset" && TETHER_MODULE_PATH="$dir" "$build/tether" "$@")
}
new_dataset
store="$work/store"
mkdir -p "$store/branches"
echo "v1" >"$store/branches/main"
tether "$work/v3" init >/dev/null || fail "tether init"
tether "$work/v3" backends --json >"$work/backends.json" || fail "tether backends with a version 3 module"
grep -q '"kind": *"dirsnap"' "$work/backends.json" || { cat "$work/backends.json"; fail "tether backends omits dirsnap"; }
tether "$work/v3" add data "$store" --kind dirsnap >"$work/add.out" 2>&1 || { cat "$work/add.out"; fail "add --kind dirsnap"; }
tether "$work/v3" commit -m "pin the store" >/dev/null || fail "tether commit through a version 3 module"
ls "$store/.pins"/tether.* >/dev/null 2>&1 || fail "tether commit made no pin through the version 3 module"
tether "$work/v3" verify >/dev/null || fail "tether verify through a version 3 module"
rm "$store/.pins"/tether.*
if tether "$work/v3" verify >/dev/null 2>&1; then
	fail "tether verify passed with the pin gone"
fi
echo "version 3 dirsnap: tether add/commit/verify drive it"

# ---- a newer module is refused ------------------------------------------
echo data >"$dataset/f"
if tether "$work/future" add f f --kind future >"$work/future.out" 2>&1; then
	fail "tether add took a backend of a newer version"
fi
cat "$work/future.out"
newer=$(sed -n 's/^#define TETHER_BACKEND_VERSION \([0-9]*\)$/\1/p' "$src/../../include/tether/backend.h")
[ -n "$newer" ] || fail "cannot read TETHER_BACKEND_VERSION"
want="module $work/future/tether-backend-future.so: backend 'future' (struct tether_backend) is version $((newer + 1)), newer than this tether's version $newer"
grep -qF "$want" "$work/future.out" || fail "the refusal does not say: $want"
[ "$(grep -c . "$work/future.out")" -le 2 ] || fail "the refusal is more than one line (and a hint)"
grep -q "unknown kind" "$work/future.out" && fail "a refused module is reported as an unknown kind"
tether "$work/future" backends --json >"$work/backends-future.json" || fail "tether backends with a refused module"
grep -q '"future"' "$work/backends-future.json" && fail "tether backends lists the refused module"
echo "newer module refused: $(head -1 "$work/future.out")"

# ---- init and shutdown --------------------------------------------------
dataset="$work/dataset-hooks"
new_dataset
tether "$work/hooks" init >/dev/null || fail "tether init"
echo data >"$dataset/f"
log="$work/hooks.log"
TETHER_ABI_HOOKS_LOG="$log" tether "$work/hooks" add h f --kind hooks >"$work/hooks-add.out" 2>&1 ||
	{ cat "$work/hooks-add.out"; fail "tether add --kind hooks"; }
printf 'init\nshutdown\n' >"$work/want.log"
cmp -s "$log" "$work/want.log" || { cat "$log"; fail "add: init and shutdown did not run once each, in order"; }
rm "$log"
TETHER_ABI_HOOKS_LOG="$log" tether "$work/hooks" status --json >"$work/status.json" 2>&1 ||
	{ cat "$work/status.json"; fail "tether status of a hooks object"; }
grep -q '"kind": *"hooks"' "$work/status.json" || { cat "$work/status.json"; fail "status does not show the hooks object"; }
cmp -s "$log" "$work/want.log" || { cat "$log"; fail "status: init and shutdown did not run once each"; }
rm "$log"
if TETHER_ABI_HOOKS_LOG="$log" TETHER_ABI_HOOKS_FAIL=1 tether "$work/hooks" status >"$work/fail.out" 2>&1; then
	fail "status passed with the module's init failing"
fi
grep -qF "module $work/hooks/tether-backend-hooks.so: init failed: hooks: told to fail" "$work/fail.out" ||
	{ cat "$work/fail.out"; fail "a failed init is not reported"; }
printf 'init\n' >"$work/want.log"
cmp -s "$log" "$work/want.log" || { cat "$log"; fail "a module whose init failed was shut down (or init ran twice)"; }
echo "hooks: init and shutdown once each; a failing init refuses the module"
