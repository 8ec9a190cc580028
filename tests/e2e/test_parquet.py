"""tether's Parquet reader and writer (src/format/parquet*.c) against the
reference implementations: pyarrow writes files in every codec, encoding and
page version, deltalake writes real checkpoints, and tether's reader must
give the rows pyarrow reads; tether's writer writes random tables that
pyarrow and DuckDB must read back equal, with statistics pyarrow agrees
with. Damaged files are refused with one line naming the file.

tests/tools/parquet-tool (built in the build's tests/ directory) is the
bridge: `rows FILE [COL...]` prints the rows as JSON, `write FILE` writes a
table given as JSON on stdin.
"""
import json
import math
import os
import random
import subprocess
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import TETHER_BIN, check_sanitizers  # noqa: E402


def find_tool():
    build = Path(TETHER_BIN).resolve().parent
    for candidate in (build / "tests" / "parquet-tool", build / "parquet-tool"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


TOOL = find_tool()
pytestmark = pytest.mark.skipif(TOOL is None, reason="parquet-tool is not built next to tether")


def tool(*args, input=None, rc=0):
    p = subprocess.run([str(TOOL), *map(str, args)], input=input, capture_output=True, text=True, timeout=300)
    check_sanitizers(p)
    assert p.returncode == rc, (p.returncode, p.stderr)
    return p


def tether_rows(path, *cols):
    return json.loads(tool("rows", path, *cols).stdout)


# ---- what pyarrow's values are in parquet.h's JSON mapping ----

def to_json(value, typ):
    if value is None:
        return None
    if pa.types.is_map(typ):
        pairs = [{"key": to_json(k, typ.key_type), "value": to_json(v, typ.item_type)} for k, v in value]
        if all(isinstance(p["key"], str) for p in pairs):
            return {p["key"]: p["value"] for p in pairs}
        return pairs
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return [to_json(v, typ.value_type) for v in value]
    if pa.types.is_struct(typ):
        return {typ.field(i).name: to_json(value.get(typ.field(i).name), typ.field(i).type)
                for i in range(typ.num_fields)}
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return value.hex()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def expected_rows(table):
    """Rows of a table as tether reports them; timestamps and dates as
    their stored integers."""
    cols = {}
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = col.cast(pa.int64())
        elif pa.types.is_date32(col.type):
            col = col.cast(pa.int32())
        cols[name] = [to_json(v, col.type) for v in col.to_pylist()]
    return [{n: cols[n][i] for n in cols} for i in range(table.num_rows)]


def nested_table(n=40, seed=7):
    rnd = random.Random(seed)

    def maybe(v, p=0.2):
        return None if rnd.random() < p else v

    words = ["alpha", "beta", "", "gamma", "\u00e9t\u00e9", "\U0001f600 emoji"]
    rows = range(n)
    return pa.table({
        "i32": pa.array([maybe(rnd.randint(-2**31, 2**31 - 1)) for _ in rows], pa.int32()),
        "i64": pa.array([maybe(rnd.randint(-2**63, 2**63 - 1)) for _ in rows], pa.int64()),
        "u8": pa.array([maybe(rnd.randint(0, 255)) for _ in rows], pa.uint8()),
        "u32": pa.array([maybe(rnd.randint(0, 2**32 - 1)) for _ in rows], pa.uint32()),
        "f32": pa.array([maybe(rnd.choice([0.5, -1.25, 3.0])) for _ in rows], pa.float32()),
        "f64": pa.array([maybe(rnd.uniform(-1e6, 1e6)) for _ in rows], pa.float64()),
        "b": pa.array([maybe(rnd.random() < 0.5) for _ in rows], pa.bool_()),
        "s": pa.array([maybe(rnd.choice(words)) for _ in rows], pa.string()),
        "bin": pa.array([maybe(bytes(rnd.randrange(256) for _ in range(rnd.randrange(5)))) for _ in rows],
                        pa.binary()),
        "fixed": pa.array([maybe(bytes([rnd.randrange(256)] * 3)) for _ in rows], pa.binary(3)),
        "ts": pa.array([maybe(rnd.randint(0, 2**50)) for _ in rows], pa.timestamp("us", tz="UTC")),
        "date": pa.array([maybe(rnd.randint(0, 20000)) for _ in rows], pa.date32()),
        "st": pa.array([maybe({"x": maybe(rnd.randint(0, 9)), "y": maybe(rnd.choice(words)),
                               "inner": maybe({"z": maybe(rnd.random() < 0.5)})}) for _ in rows],
                       pa.struct([("x", pa.int64()), ("y", pa.string()),
                                  ("inner", pa.struct([("z", pa.bool_())]))])),
        "li": pa.array([maybe([maybe(rnd.randint(0, 99)) for _ in range(rnd.randrange(4))]) for _ in rows],
                       pa.list_(pa.int64())),
        "lls": pa.array([maybe([maybe([maybe(rnd.choice(words)) for _ in range(rnd.randrange(3))])
                                for _ in range(rnd.randrange(3))]) for _ in rows],
                        pa.list_(pa.list_(pa.string()))),
        "ls": pa.array([maybe([maybe({"a": maybe([rnd.randint(0, 5) for _ in range(rnd.randrange(3))])})
                               for _ in range(rnd.randrange(3))]) for _ in rows],
                       pa.list_(pa.struct([("a", pa.list_(pa.int32()))]))),
        "m": pa.array([maybe([(rnd.choice(words) + str(k), maybe(rnd.randint(0, 9))) for k in range(rnd.randrange(3))])
                       for _ in rows], pa.map_(pa.string(), pa.int32())),
        "mi": pa.array([maybe([(k, maybe(rnd.choice(words))) for k in range(rnd.randrange(3))]) for _ in rows],
                       pa.map_(pa.int64(), pa.string())),
        "ml": pa.array([maybe([("k", maybe([1, 2]))]) for _ in rows], pa.map_(pa.string(), pa.list_(pa.int32()))),
    })


@pytest.mark.parametrize("codec", ["none", "snappy", "gzip", "zstd"])
@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
@pytest.mark.parametrize("dictionary", [True, False])
def test_pyarrow_files(tmp_path, codec, page_version, dictionary):
    table = nested_table()
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, compression=codec, data_page_version=page_version, use_dictionary=dictionary,
                   row_group_size=15, data_page_size=64)  # several row groups, several pages per chunk
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 3
    assert tether_rows(path) == expected_rows(pq.read_table(path))
    # A subset of the columns, and one the file does not have.
    sub = tether_rows(path, "m", "st", "nosuch")
    assert sub == [{"m": r["m"], "st": r["st"]} for r in expected_rows(pq.read_table(path))]


def test_pyarrow_legacy_and_required(tmp_path):
    """Non-compliant list names, required fields and a BYTE_STREAM-free
    plain file of one big row group: the same rows as pyarrow reads."""
    schema = pa.schema([
        pa.field("req", pa.int64(), nullable=False),
        pa.field("rl", pa.list_(pa.field("item", pa.string(), nullable=False)), nullable=False),
        pa.field("rs", pa.struct([pa.field("a", pa.int32(), nullable=False)]), nullable=False),
    ])
    table = pa.table({
        "req": list(range(3000)),
        "rl": [[str(i)] * (i % 3) for i in range(3000)],
        "rs": [{"a": i} for i in range(3000)],
    }, schema=schema)
    path = tmp_path / "legacy.parquet"
    pq.write_table(table, path, use_compliant_nested_type=False, compression="snappy")
    assert tether_rows(path) == expected_rows(pq.read_table(path))


def test_rle_booleans_and_empty(tmp_path):
    table = pa.table({"b": pa.array([True, False, None] * 100), "e": pa.array([[]] * 300, pa.list_(pa.int8()))})
    path = tmp_path / "b.parquet"
    pq.write_table(table, path, data_page_version="2.0", use_dictionary=False, compression="zstd")
    assert tether_rows(path) == expected_rows(table)
    empty = tmp_path / "empty.parquet"
    pq.write_table(table.slice(0, 0), empty)
    assert tether_rows(empty) == []


@pytest.mark.parametrize("page_version", ["1.0", "2.0"])
def test_delta_and_split_encodings(tmp_path, page_version):
    """DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY and
    BYTE_STREAM_SPLIT, which Parquet's v2 writers use."""
    rnd = random.Random(5)
    n = 3000
    words = [f"prefix/shared/{rnd.randrange(40):04d}/tail{'x' * rnd.randrange(5)}" for _ in range(n)]

    def maybe(v):
        return None if rnd.random() < 0.1 else v

    table = pa.table({
        "i32": pa.array([maybe(rnd.choice([rnd.randint(-2**31, 2**31 - 1), i])) for i in range(n)], pa.int32()),
        "i64": pa.array([maybe(rnd.choice([rnd.randint(-2**63, 2**63 - 1), i * 1000])) for i in range(n)], pa.int64()),
        "u64": pa.array([maybe(rnd.randint(0, 2**63 - 1)) for _ in range(n)], pa.uint64()),
        "dlba": pa.array([maybe(w) for w in words], pa.string()),
        "dba": pa.array([maybe(w) for w in sorted(words)], pa.string()),
        "dbin": pa.array([maybe(w.encode()) for w in words], pa.binary()),
        "fixed": pa.array([maybe(w.encode()[:6].ljust(6, b"_")) for w in words], pa.binary(6)),
        "f32": pa.array([maybe(float(i) / 8) for i in range(n)], pa.float32()),
        "f64": pa.array([maybe(rnd.uniform(-1, 1)) for _ in range(n)], pa.float64()),
        "s32": pa.array([maybe(i - 500) for i in range(n)], pa.int32()),
    })
    path = tmp_path / "enc.parquet"
    pq.write_table(table, path, use_dictionary=False, data_page_version=page_version, compression="zstd",
                   data_page_size=4096, column_encoding={
                       "i32": "DELTA_BINARY_PACKED", "i64": "DELTA_BINARY_PACKED", "u64": "DELTA_BINARY_PACKED",
                       "dlba": "DELTA_LENGTH_BYTE_ARRAY", "dba": "DELTA_BYTE_ARRAY", "dbin": "DELTA_BYTE_ARRAY",
                       "fixed": "DELTA_BYTE_ARRAY", "f32": "BYTE_STREAM_SPLIT", "f64": "BYTE_STREAM_SPLIT",
                       "s32": "BYTE_STREAM_SPLIT"})
    rg = pq.ParquetFile(path).metadata.row_group(0)
    assert "DELTA_BYTE_ARRAY" in rg.column(4).encodings and "BYTE_STREAM_SPLIT" in rg.column(8).encodings
    got = tether_rows(path)
    want = expected_rows(pq.read_table(path))
    # uint64 past int64's range reads as a real (JSON integers are signed).
    for r in want:
        if r["u64"] is not None and r["u64"] >= 2**63:
            r["u64"] = float(r["u64"])
    assert got == want


def test_unsupported_encoding_named(tmp_path):
    """An encoding the column's type does not allow is named, in one line."""
    table = pa.table({"x": pa.array(range(100), pa.int64())})
    path = tmp_path / "bad-encoding.parquet"
    pq.write_table(table, path, use_dictionary=False, compression="none")
    data = bytearray(path.read_bytes())
    # The data page header's encoding field (i32 PLAIN = zigzag 0) becomes
    # DELTA_BYTE_ARRAY (7, zigzag 14): find the DataPageHeader's field 2.
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    at = meta.data_page_offset
    hdr = data[at:at + 40]
    i = hdr.index(bytes([0x15, 0x00]), 6)  # delta 1, i32 field (encoding) = 0, after num_values
    data[at + i + 1] = 14
    path.write_bytes(bytes(data))
    p = tool("rows", path, rc=1)
    assert p.stderr.count("\n") == 1
    assert str(path) in p.stderr and "DELTA_BYTE_ARRAY (not supported)" in p.stderr, p.stderr


# ---- Delta checkpoints ----

def delta_table(path, commits, **kw):
    deltalake = pytest.importorskip("deltalake")
    for i in range(commits):
        deltalake.write_deltalake(str(path), pa.table({"a": [i, i + 1], "p": ["x", "y"]}),
                                  mode="append", partition_by=["p"], **(kw if i == 0 else {}))
    return deltalake.DeltaTable(str(path))


def checkpoint_actions(path, version):
    rows = tether_rows(Path(path) / "_delta_log" / f"{version:020d}.checkpoint.parquet",
                       "protocol", "metaData", "add", "remove", "txn")
    protocol = [r["protocol"] for r in rows if r.get("protocol")]
    meta = [r["metaData"] for r in rows if r.get("metaData")]
    adds = [r["add"] for r in rows if r.get("add")]
    return rows, protocol, meta, adds


def test_delta_checkpoints(tmp_path):
    path = tmp_path / "dt"
    dt = delta_table(path, 12)
    dt.create_checkpoint()
    v = dt.version()
    rows, protocol, meta, adds = checkpoint_actions(path, v)
    assert len(protocol) == 1 and len(meta) == 1
    p = dt.protocol()
    assert protocol[0]["minReaderVersion"] == p.min_reader_version
    assert protocol[0]["minWriterVersion"] == p.min_writer_version
    m = dt.metadata()
    assert meta[0]["id"] == m.id
    assert meta[0]["partitionColumns"] == ["p"]
    assert json.loads(meta[0]["schemaString"]) == json.loads(dt.schema().to_json())
    assert sorted(a["path"] for a in adds) == sorted(dt.file_uris() and [Path(u).relative_to(path).as_posix()
                                                                         for u in dt.file_uris()])
    assert all(a["partitionValues"]["p"] in ("x", "y") for a in adds)
    # Every column, against pyarrow's reading of the same file.
    ck = path / "_delta_log" / f"{v:020d}.checkpoint.parquet"
    assert tether_rows(ck) == expected_rows(pq.read_table(ck))


def test_delta_checkpoint_features(tmp_path):
    """A table with reader features (deletion vectors): the protocol's
    readerFeatures list and the configuration map come through."""
    path = tmp_path / "dv"
    dt = delta_table(path, 3, configuration={"delta.enableDeletionVectors": "true"})
    dt.create_checkpoint()
    _, protocol, meta, _ = checkpoint_actions(path, dt.version())
    p = dt.protocol()
    assert protocol[0]["minReaderVersion"] == p.min_reader_version == 3
    assert sorted(protocol[0]["readerFeatures"]) == sorted(p.reader_features)
    assert sorted(protocol[0]["writerFeatures"]) == sorted(p.writer_features)
    assert meta[0]["configuration"] == dt.metadata().configuration


def test_delta_second_checkpoint(tmp_path):
    """Two checkpoints; the later one alone still holds the metadata id."""
    path = tmp_path / "dt2"
    dt = delta_table(path, 5)
    dt.create_checkpoint()
    first = dt.version()
    dt = delta_table(path, 4)
    dt.create_checkpoint()
    assert dt.version() > first
    _, protocol, meta, adds = checkpoint_actions(path, dt.version())
    assert meta[0]["id"] == dt.metadata().id
    assert len(adds) == len(dt.file_uris())


# ---- damage ----

def test_damaged_files_refused(tmp_path):
    table = nested_table(30, seed=3)
    good = tmp_path / "good.parquet"
    pq.write_table(table, good, compression="snappy")
    data = good.read_bytes()
    bad = tmp_path / "bad.parquet"
    cuts = sorted(set([0, 3, 4, 11, 12, len(data) // 2, len(data) - 9, len(data) - 8, len(data) - 1]))
    for cut in cuts:
        bad.write_bytes(data[:cut])
        p = tool("rows", bad, rc=1)
        assert p.stderr.startswith(str(bad) + ": ") and p.stderr.count("\n") == 1, p.stderr
    rnd = random.Random(11)
    refused = 0
    for _ in range(150):
        mutated = bytearray(data)
        for _ in range(rnd.randint(1, 6)):
            mutated[rnd.randrange(len(mutated))] = rnd.randrange(256)
        bad.write_bytes(bytes(mutated))
        p = subprocess.run([str(TOOL), "rows", str(bad)], capture_output=True, text=True, timeout=60)
        check_sanitizers(p)
        assert p.returncode in (0, 1), p.stderr
        if p.returncode == 1:
            refused += 1
            assert p.stderr.startswith(str(bad) + ": ") and p.stderr.count("\n") == 1, p.stderr
    assert refused > 0


# ---- the writer ----

TYPES = ["boolean", "int32", "int64", "double", "string", "timestamp_us"]


def random_value(rnd, typ):
    if typ == "boolean":
        return rnd.random() < 0.5
    if typ == "int32":
        return rnd.choice([rnd.randint(-2**31, 2**31 - 1), rnd.randint(-3, 3)])
    if typ in ("int64", "timestamp_us"):
        lo = 0 if typ == "timestamp_us" else -2**63
        return rnd.choice([rnd.randint(lo, 2**63 - 1), rnd.randint(0, 5)])
    if typ == "double":
        return rnd.choice([rnd.uniform(-1e300, 1e300), float(rnd.randint(-3, 3)), -0.0, 0.0, 1e-310])
    alphabet = "ab\u00e9\u4e2d\U0001f600 \"\\\n"
    pool = ["", "same", "Same", "zz"]
    if rnd.random() < 0.6:
        return rnd.choice(pool)
    return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(12)))


def random_table(rnd):
    ncols = rnd.randint(1, 7)
    cols = [{"name": f"c{i}_{rnd.choice(TYPES)}", "nullable": rnd.random() < 0.6} for i in range(ncols)]
    for c in cols:
        c["type"] = c["name"].split("_", 1)[1]
    nrows = rnd.choice([0, 1, 7, 100, 1000])
    distinct = rnd.choice([2, 10, 10**9])  # dictionary-friendly or not
    rows = []
    for _ in range(nrows):
        row = []
        for c in cols:
            if c["nullable"] and rnd.random() < 0.2:
                row.append(None)
            else:
                r2 = random.Random(rnd.randrange(distinct))
                row.append(random_value(r2, c["type"]))
        rows.append(row)
    return {"columns": cols, "rows": rows, "row_group_rows": rnd.choice([0, 1, 50, 333])}



def test_writer_round_trip(tmp_path):
    duckdb = pytest.importorskip("duckdb")
    rnd = random.Random(2026)
    for n in range(40):
        spec = random_table(rnd)
        path = tmp_path / f"w{n}.parquet"
        tool("write", path, input=json.dumps(spec))
        again = tmp_path / f"w{n}b.parquet"
        tool("write", again, input=json.dumps(spec))
        assert path.read_bytes() == again.read_bytes()  # deterministic
        cols = spec["columns"]
        names = [c["name"] for c in cols]
        want = [dict(zip(names, r)) for r in spec["rows"]]

        f = pq.ParquetFile(path)
        table = f.read()
        for c in cols:
            field = table.schema.field(c["name"])
            assert field.nullable == c["nullable"]
            want_type = {"boolean": pa.bool_(), "int32": pa.int32(), "int64": pa.int64(), "double": pa.float64(),
                         "string": pa.string(), "timestamp_us": pa.timestamp("us", tz="UTC")}[c["type"]]
            assert field.type == want_type, (c, field.type)
        assert expected_rows(table) == want, spec
        assert tether_rows(path) == want

        # Row groups as asked, and statistics pyarrow agrees with.
        per = spec["row_group_rows"] or 10**9
        assert f.metadata.num_row_groups == (len(want) + per - 1) // per
        start = 0
        for g in range(f.metadata.num_row_groups):
            rg = f.metadata.row_group(g)
            for ci, c in enumerate(cols):
                chunk = rg.column(ci)
                assert chunk.compression == "ZSTD"
                vals = [r[c["name"]] for r in want[start:start + rg.num_rows] if r[c["name"]] is not None]
                st = chunk.statistics
                assert st.null_count == rg.num_rows - len(vals)
                if vals and c["type"] != "timestamp_us":
                    key = (lambda s: s.encode()) if c["type"] == "string" else (lambda x: x)
                    assert st.min == min(vals, key=key) and st.max == max(vals, key=key), (c, st)
            start += rg.num_rows

        # DuckDB, timestamps as their microseconds.
        sel = ", ".join(f'epoch_us("{c["name"]}")' if c["type"] == "timestamp_us" else f'"{c["name"]}"' for c in cols)
        got = duckdb.sql(f"SELECT {sel} FROM read_parquet('{path}')").fetchall()
        assert [list(r) for r in got] == spec["rows"], spec


def test_writer_dictionary_chosen_when_smaller(tmp_path):
    spec = {"columns": [{"name": "rep", "type": "string"}, {"name": "uniq", "type": "int64"}],
            "row_group_rows": 0,
            "rows": [["the same long string value", i * 7919] for i in range(2000)]}
    path = tmp_path / "d.parquet"
    tool("write", path, input=json.dumps(spec))
    rg = pq.ParquetFile(path).metadata.row_group(0)
    assert rg.column(0).has_dictionary_page and "PLAIN_DICTIONARY" in rg.column(0).encodings
    assert not rg.column(1).has_dictionary_page and "PLAIN" in rg.column(1).encodings
