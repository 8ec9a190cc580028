#!/bin/sh
# The library never writes to stderr, stdout or a terminal (docs/BACKENDS.md,
# "Progress"): errors go through tether_error_set, progress through the
# caller's callback, and only the CLI (src/cli) and the test harness
# (src/testing) print. Fails naming every line under src/core, src/util,
# src/store, src/format, src/backends, src/vcs and src/sql that names a standard
# stream, asks isatty, or prints (printf, puts, perror, dprintf, or a write
# to descriptors 1 and 2). A printf format attribute is no print. Comments are not code: lines that start one are
# skipped.
#
# usage: library-is-quiet.sh SOURCE_ROOT
set -eu
root=${1:?usage: library-is-quiet.sh SOURCE_ROOT}
cd "$root"
pattern='\b(stderr|stdout|STDERR_FILENO|STDOUT_FILENO|isatty|perror|vprintf|dprintf|vdprintf|puts|putchar|printf)\b|\bwrite\s*\(\s*[12]\s*,'
# (a printf format attribute names printf without printing)
hits=$(grep -rnE "$pattern" src/core src/util src/store src/format src/backends src/vcs src/sql \
	--include='*.c' --include='*.h' | grep -vE '^[^:]+:[0-9]+:\s*(/\*|\*|//)' |
	sed -E 's/format\s*\(\s*printf\s*,/format(FORMAT,/g' | grep -E "$pattern" || true)
if [ -n "$hits" ]; then
	echo "the library writes to a terminal or a standard stream (route it through the progress callback or tether_error_set):" >&2
	echo "$hits" >&2
	exit 1
fi
