#!/bin/sh
# Regenerate the seed corpora of the git fuzz targets (gdelta, gloose,
# gpack, grefs) from real git output: small repositories made here, their
# objects, packs and refs cut into the targets' input layouts (see each
# fuzz_g*.c). Run from anywhere; writes tests/fuzz/corpus/g*/seed-*.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/corpus
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_AUTHOR_NAME=seed GIT_AUTHOR_EMAIL=seed@example.com GIT_COMMITTER_NAME=seed \
	GIT_COMMITTER_EMAIL=seed@example.com GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' \
	GIT_COMMITTER_DATE='2026-01-01T00:00:00Z' GIT_CONFIG_NOSYSTEM=1 HOME=$work
mkdir -p "$corpus/gdelta" "$corpus/gloose" "$corpus/gpack" "$corpus/grefs"
# the targets' part separator (a function: $(...) would drop its newline)
sep() { printf '\n--\n'; }

repo=$work/r
git init -q -b main "$repo"
cd "$repo"
i=0
while [ $i -lt 6 ]; do
	seq 1 40 | sed "s/^$((i * 5 + 3))\$/changed $i/" >a.txt
	printf 'line %s\n' $i >>b.txt
	git add a.txt b.txt
	git commit -q -m "commit $i"
	i=$((i + 1))
done
git tag -a v1 -m 'tag one'

# gloose: two loose objects as stored (first byte odd), and their
# inflated forms (first byte even: the target deflates them).
n=0
for id in $(git rev-parse HEAD HEAD:a.txt HEAD^{tree}); do
	f=.git/objects/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-)
	{ printf '\001'; cat "$f"; } >"$corpus/gloose/seed-stored-$n"
	{ printf '\000'; printf '%s %s\0' "$(git cat-file -t "$id")" "$(git cat-file -s "$id")"; git cat-file "$(git cat-file -t "$id")" "$id"; } \
		>"$corpus/gloose/seed-inflated-$n"
	n=$((n + 1))
done

# grefs: HEAD, packed-refs (with a peeled tag), refs/heads/main, refs/tags/v1, config.
git pack-refs --all
cp .git/packed-refs "$work/packed"
main=$(git rev-parse main)
{ printf 'ref: refs/heads/main\n'; sep; cat "$work/packed"; } >"$corpus/grefs/seed-packed"
{ printf 'ref: refs/heads/main\n'; sep; sep; printf 'ref: refs/tags/v1\n'; sep;
  printf '%s\n' "$main"; sep; cat .git/config; } >"$corpus/grefs/seed-loose-symbolic"
{ printf '%s\n' "$main"; sep; cat "$work/packed"; sep; printf 'ref: refs/heads/main\n'; } \
	>"$corpus/grefs/seed-detached-loop"

# gpack: OFS deltas (gc --aggressive), REF deltas (no delta-base-offset),
# and two packs where the second's thin REF deltas lean on the first.
pack_input() { # idx pack [idx pack]
	cat "$1"; sep; cat "$2"
	if [ $# -gt 2 ]; then sep; cat "$3"; sep; cat "$4"; fi
}
git gc -q --aggressive
p=$(ls .git/objects/pack/*.idx)
pack_input "$p" "${p%.idx}.pack" >"$corpus/gpack/seed-ofs"
git -c repack.useDeltaBaseOffset=false repack -q -adf --depth=50
p=$(ls .git/objects/pack/*.idx)
pack_input "$p" "${p%.idx}.pack" >"$corpus/gpack/seed-ref"
base=$(git rev-parse HEAD~3)
git rev-list --objects "$base" | git pack-objects -q "$work/old" >/dev/null
printf 'HEAD\n^%s\n' "$base" | git pack-objects -q --revs --thin --stdout >"$work/thin.pack"
git init -q --bare "$work/fix"
cp "$work"/old-*.pack "$work"/old-*.idx "$work/fix/objects/pack/"
git -C "$work/fix" index-pack --fix-thin --stdin <"$work/thin.pack" >/dev/null
rm "$work"/fix/objects/pack/old-*
o=$(ls "$work"/old-*.idx)
t=$(ls "$work"/fix/objects/pack/*.idx)
pack_input "$o" "${o%.idx}.pack" "$t" "${t%.idx}.pack" >"$corpus/gpack/seed-two-packs"

# gdelta: the base's length in two bytes, the base, then a REF delta's
# data as git wrote it in the pack above (its entry inflated).
python3 - "$corpus/gdelta" .git/objects/pack/*.pack <<'PY'
import sys, zlib, subprocess, os
out, pack = sys.argv[1], sys.argv[2]
data = open(pack, 'rb').read()
idx = subprocess.run(['git', 'verify-pack', '-v', pack[:-5] + '.idx'], capture_output=True, text=True).stdout
objs = {}
rows = []
for line in idx.splitlines():
    f = line.split()
    if len(f) >= 5 and len(f[0]) == 40:
        objs[f[0]] = int(f[4])
        rows.append(f)
n = 0
for f in rows:
    if len(f) == 7 and n < 6:  # a delta: id type size size-in-pack offset depth base
        off, base = int(f[4]), f[6]
        q = off
        c = data[q]; q += 1
        while c & 0x80:
            c = data[q]; q += 1
        q += 20  # REF delta base id
        delta = zlib.decompressobj().decompress(data[q:])
        body = subprocess.run(['git', 'cat-file', '-p', base], capture_output=True).stdout
        kind = subprocess.run(['git', 'cat-file', '-t', base], capture_output=True, text=True).stdout.strip()
        if kind != 'blob' and kind != 'commit':
            continue
        if len(body) > 0xffff:
            continue
        with open(os.path.join(out, 'seed-%d' % n), 'wb') as w:
            w.write(bytes([len(body) >> 8, len(body) & 255]) + body + delta)
        n += 1
PY
ls -l "$corpus"/g*/seed-* | awk '{print $5, $9}'
