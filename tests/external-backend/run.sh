#!/bin/sh
# A third party's backend, end to end: build dirsnap and its harness out of
# tree exactly as docs/BACKENDS.md says (cc, pkg-config, nothing of tether's
# build), hold it to the conformance suite, drive it with the tether command,
# and check the suite fails two copies of it that each tell one lie.
#
#   run.sh BUILD_ROOT SOURCE_DIR      (meson test passes both)
set -eu

build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tether-external-XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

fail() {
	echo "run.sh: FAIL: $*" >&2
	exit 1
}

# docs/BACKENDS.md shows dirsnap.c and harness.c whole: they must be these.
doc="$src/../../docs/BACKENDS.md"
for f in dirsnap.c harness.c; do
	awk -v want="<!-- file: tests/external-backend/$f -->" '
		$0 == want { found = 1; next }
		found == 1 && /^```c$/ { found = 2; next }
		found == 2 && /^```$/ { exit }
		found == 2 { print }' "$doc" >"$work/doc-$f"
	cmp -s "$work/doc-$f" "$src/$f" || fail "docs/BACKENDS.md's copy of $f differs from tests/external-backend/$f"
done

# The build tree's uninstalled tether.pc stands in for an installed one.
PKG_CONFIG_PATH="$build/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
cflags=$(pkg-config --cflags tether) || fail "pkg-config cannot find tether"
cc=${CC:-cc}
strict="-std=c17 -Wall -Wextra -Werror"

mkdir "$work/good" "$work/lie-verify" "$work/lie-expect"
# shellcheck disable=SC2086 # $cflags and $strict are lists of flags
{
	$cc $strict -shared -fPIC "$src/dirsnap.c" $cflags -o "$work/good/tether-backend-dirsnap.so"
	$cc $strict -shared -fPIC "$src/harness.c" $cflags -o "$work/harness.so"
	$cc $strict -shared -fPIC -DLIE_VERIFY -I"$src" "$src/broken.c" $cflags \
		-o "$work/lie-verify/tether-backend-dirsnap.so"
	$cc $strict -shared -fPIC -DLIE_EXPECT -I"$src" "$src/broken.c" $cflags \
		-o "$work/lie-expect/tether-backend-dirsnap.so"
} || fail "the example does not build"

# The honest backend passes every check.
if ! TETHER_MODULE_PATH="$work/good" "$build/tether-conformance" dirsnap --harness "$work/harness.so" \
	>"$work/good.out" 2>&1; then
	cat "$work/good.out"
	fail "dirsnap failed the conformance suite"
fi
cat "$work/good.out"
grep -q '^ok   fork: a stale expect is refused' "$work/good.out" || fail "the suite skipped dirsnap's forks"

# The same suite as a library: the backend's own test program links
# libtether-testing (and, through its .pc, libtether). In a sanitizer build
# those libraries need the sanitizer runtimes linked into the program too.
# ($CC is the compiler that built them, which meson test passes: a
# sanitizer's runtime is the compiler's own.)
san=""
if nm -D "$build/libtether.so" 2>/dev/null | grep -q __asan_init; then
	san="-fsanitize=address,undefined"
elif nm -D "$build/libtether.so" 2>/dev/null | grep -q __tsan_init; then
	san="-fsanitize=thread"
fi
# shellcheck disable=SC2086
$cc $strict $san "$src/direct.c" "$src/dirsnap.c" "$src/harness.c" $(pkg-config --cflags --libs tether-testing) \
	-Wl,-rpath,"$build" -o "$work/direct" || fail "direct.c does not build against libtether-testing"
"$work/direct" >"$work/direct.out" 2>&1 || { cat "$work/direct.out"; fail "dirsnap failed the suite run as a library"; }
echo "linked against libtether-testing: $(tail -1 "$work/direct.out")"

# tether itself finds the kind on the module path: track a store in a
# dataset, commit (which pins it through the module), verify, and see verify
# fail once the pin is gone.
store="$work/store"
mkdir -p "$store/branches"
echo "v1" >"$store/branches/main"
git init -q "$work/dataset"
git -C "$work/dataset" config user.name "tether tests"
git -C "$work/dataset" config user.email "tests@tether.invalid"
tether() { (cd "$work/dataset" && TETHER_MODULE_PATH="$work/good" "$build/tether" "$@"); }
tether init >/dev/null || fail "tether init"
tether add data "$store" --kind dirsnap >"$work/add.out" 2>&1 || { cat "$work/add.out"; fail "tether add --kind dirsnap"; }
grep -q "kind dirsnap, tier forkable" "$work/add.out" || { cat "$work/add.out"; fail "tether add does not see dirsnap's tier"; }
tether commit -m "pin the store" >/dev/null || fail "tether commit"
ls "$store/.pins"/tether.* >/dev/null 2>&1 || fail "tether commit made no pin in the store"
tether verify >/dev/null || fail "tether verify of a pinned dirsnap store"
rm "$store/.pins"/tether.*
if tether verify >"$work/verify.out" 2>&1; then
	fail "tether verify passed with the pin gone"
fi
echo "tether add/commit/verify drive dirsnap: $(head -1 "$work/add.out")"

# The two `add` options dirsnap declares (ds_add_options): listed by
# `tether add --help` under the kind, parsed, and checked by tether before
# the backend sees them, with nothing of tether's own changed for them.
tether add --help >"$work/help.out" 2>&1 || { cat "$work/help.out"; fail "tether add --help"; }
awk '/^  dirsnap:$/ { k = 1; next } /^  [a-z]/ { k = 0 } k' "$work/help.out" >"$work/help-dirsnap.out"
grep -q -- '--branch NAME .*the branch file to follow; default main' "$work/help-dirsnap.out" &&
	grep -q -- '--sync WHEN .*fsync a ref.*; one of always or never; default always' "$work/help-dirsnap.out" ||
	{ cat "$work/help.out"; fail "tether add --help does not list dirsnap's --branch and --sync"; }
rc=0
tether add bad "$store" --kind dirsnap --sync sometimes >"$work/bad.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { cat "$work/bad.out"; fail "--sync sometimes exited $rc, not 2 (usage)"; }
grep -q "option '--sync' of kind dirsnap takes always or never, not 'sometimes'" "$work/bad.out" ||
	{ cat "$work/bad.out"; fail "--sync sometimes is not refused naming the option and its values"; }
[ "$(wc -l <"$work/bad.out")" -le 2 ] || { cat "$work/bad.out"; fail "the usage error is more than a line and a hint"; }
rc=0
tether add bad "$store" --kind dirsnap --bogus x >"$work/bad.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "unknown option '--bogus' for 'add'" "$work/bad.out" ||
	{ cat "$work/bad.out"; fail "an option dirsnap does not declare is not refused"; }
# the library refuses it too, as --option hands it over
rc=0
tether add bad "$store" --kind dirsnap --option sync=sometimes >"$work/bad.out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q "sometimes" "$work/bad.out" || { cat "$work/bad.out"; fail "--option sync=sometimes was not refused"; }
[ ! -e "$work/dataset/.tether/objects/bad.toml" ] || fail "a refused add wrote a manifest"
echo "v1" >"$store/branches/side"
tether add side "$store" --kind dirsnap --branch side --sync never >"$work/add2.out" 2>&1 ||
	{ cat "$work/add2.out"; fail "tether add --kind dirsnap --branch side --sync never"; }
grep -q '^branch = "side"$' "$work/dataset/.tether/objects/side.toml" &&
	grep -q '^sync = "never"$' "$work/dataset/.tether/objects/side.toml" ||
	{ cat "$work/dataset/.tether/objects/side.toml"; fail "--branch and --sync did not reach the locator"; }
tether commit -m "pin the side branch" >/dev/null || fail "tether commit of a --sync never object"
echo "dirsnap's declared add options: listed, parsed, and a bad value refused (exit 2)"

# Each lie is caught, by the check it breaks.
expect_caught() { # DIR CHECK
	if TETHER_MODULE_PATH="$work/$1" "$build/tether-conformance" dirsnap --harness "$work/harness.so" \
		>"$work/$1.out" 2>&1; then
		cat "$work/$1.out"
		fail "the suite passed dirsnap with $1"
	fi
	grep -q "^FAIL $2" "$work/$1.out" || { cat "$work/$1.out"; fail "$1 was not caught by '$2'"; }
	echo "caught $1: $(grep "^FAIL $2" "$work/$1.out")"
}
expect_caught lie-verify "pin: unpin removes it and verify then fails"
expect_caught lie-expect "fork: a stale expect is refused"

# A commit refused as drift prints the backend's hint (drift_hint), or
# tether's generic one when the backend declares none (frozen.c).
mkdir "$work/frozen-hint" "$work/frozen-plain"
# shellcheck disable=SC2086
{
	$cc $strict -shared -fPIC -DFROZEN_HINT -I"$src" "$src/frozen.c" $cflags \
		-o "$work/frozen-hint/tether-backend-dirsnap.so"
	$cc $strict -shared -fPIC -I"$src" "$src/frozen.c" $cflags -o "$work/frozen-plain/tether-backend-dirsnap.so"
} || fail "frozen.c does not build"
expect_hint() { # MODULE_DIR HINT
	d="$work/ds-$1" s="$work/store-$1"
	mkdir -p "$s/branches"
	echo "v1" >"$s/branches/main"
	git init -q "$d"
	git -C "$d" config user.name "tether tests"
	git -C "$d" config user.email "tests@tether.invalid"
	(cd "$d" && TETHER_MODULE_PATH="$work/$1" "$build/tether" init >/dev/null &&
		TETHER_MODULE_PATH="$work/$1" "$build/tether" add data "$s" --kind dirsnap >/dev/null &&
		TETHER_MODULE_PATH="$work/$1" "$build/tether" commit -m "v1" >/dev/null) || fail "$1: add and commit"
	echo "v2" >"$s/branches/main"
	rc=0
	(cd "$d" && TETHER_MODULE_PATH="$work/$1" "$build/tether" commit -m "v2") >"$work/$1.out" 2>&1 || rc=$?
	[ "$rc" -eq 3 ] || { cat "$work/$1.out"; fail "$1: a drifted commit exited $rc, not 3"; }
	grep -q "a frozen branch file changed" "$work/$1.out" || { cat "$work/$1.out"; fail "$1: no drift reason"; }
	[ "$(grep '^hint: ' "$work/$1.out")" = "hint: $2" ] || { cat "$work/$1.out"; fail "$1: the hint is not '$2'"; }
	echo "drift under $1: $(grep '^hint: ' "$work/$1.out")"
}
expect_hint frozen-hint "put the branch file back with dirsnap-restore, or add the store again"
expect_hint frozen-plain "restore the recorded data"
