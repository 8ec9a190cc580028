"""FlexBuffers cross-checked against an independent implementation: the
pure-Python `flatbuffers.flexbuffers` module of PyPI's flatbuffers package.

tests/tools/flex-tool (built by meson next to tether, in the build's
tests/ directory) turns JSON lines into FlexBuffer hex and back. Values the
C encoder writes must load in Python as the same value, and values Python
dumps (typed and fixed-length vectors, indirect scalars and all) must
decode in C as the same value. Equality is strict: 1, 1.0 and True differ.
Map keys here are ASCII: the Python module encodes and decodes keys as
ASCII (non-ASCII keys are covered by the C unit tests).
"""
import json
import math
import os
import random
import subprocess
from pathlib import Path

import pytest
from flatbuffers import flexbuffers

from conftest import TETHER_BIN, check_sanitizers


def find_tool():
    build = Path(TETHER_BIN).resolve().parent
    for candidate in (build / "flex-tool", build / "tests" / "flex-tool"):
        if os.access(candidate, os.X_OK):
            return candidate
    return None


TOOL = find_tool()
pytestmark = pytest.mark.skipif(TOOL is None, reason="flex-tool is not built next to tether")


def run_tool(mode, lines):
    p = subprocess.run([str(TOOL), mode], input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, timeout=120)
    check_sanitizers(p)
    assert p.returncode == 0, p.stderr
    out = p.stdout.split("\n")
    assert out[-1] == ""
    assert len(out) - 1 == len(lines), p.stdout[-2000:]
    return out[:-1]


def same(a, b):
    """Equality that tells 1, 1.0 and True apart, and -0.0 from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b


def deep(levels):
    v = []
    for _ in range(levels - 1):
        v = [v]
    return v


FIXED = [
    None, True, False, 0, 1, -1, 127, 128, 255, 256, -128, -129, 65535, 65536, -32768,
    -32769, 2**31 - 1, 2**31, 2**32, -2**31 - 1, 2**53 + 1, 2**63 - 1, -2**63,
    0.0, -0.0, 1.5, 0.1, 3.4028234663852886e38, 1e300, -2.5e-310, 1.401298464324817e-45,
    "", "a", "h\u00e9llo \u2713 \U0001f9ca", "x" * 300, "y" * 70000, "nul\x00inside",
    [], {}, [1, 2, 3], [1, -1], [1.5, 2.5], [True, False], ["a", "b"], [None], [[[]]],
    {"a": 1}, {"b": 1, "a": 2, "B": 3, "": 4},
    {"k" * 300: [1, {"z": None}]},
    {"is_root": True},
    {"author": "seed", "nested": {"a": [1, 2, {"b": "c"}]}, "x": [1, -2, 3.25]},
    [{"name": i, "tags": ["t%d" % i] * (i % 3)} for i in range(300)],
    list(range(-150, 150)),
    [float(i) / 7 for i in range(40)],
    deep(64),
]


def random_value(rng, depth=0):
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 6 else [])
    k = rng.choice(kinds)
    if k == "null":
        return None
    if k == "bool":
        return rng.random() < 0.5
    if k == "int":
        bits = rng.choice([7, 8, 15, 16, 31, 32, 62])
        return rng.randint(-2**bits, 2**bits)
    if k == "float":
        return rng.choice([rng.random() * 10**rng.randint(-30, 30), float(rng.randint(-1000, 1000)) / 4])
    if k == "str":
        alphabet = "abcXYZ09 _-\u00e9\u4e2d\U0001f600\n\"\\"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
    if k == "list":
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 6))]
    return {"".join(rng.choice("abcdefgh") for _ in range(rng.randint(0, 5))): random_value(rng, depth + 1)
            for _ in range(rng.randint(0, 6))}


VALUES = FIXED + [random_value(random.Random(seed)) for seed in range(300)]


def test_c_encodes_what_python_loads():
    hexes = run_tool("encode", [json.dumps(v) for v in VALUES])
    for v, h in zip(VALUES, hexes):
        assert not h.startswith("error:"), (v, h)
        got = flexbuffers.Loads(bytes.fromhex(h))
        assert same(got, v), (repr(v)[:200], repr(got)[:200])


def python_dumps(v):
    """Python's Dumps, or None for what it cannot write (it overflows on a
    float beyond float32's range while choosing a width)."""
    try:
        return flexbuffers.Dumps(v)
    except OverflowError:
        return None


def test_c_decodes_what_python_dumps():
    pairs = [(v, python_dumps(v)) for v in VALUES]
    pairs = [(v, buf) for v, buf in pairs if buf is not None]
    assert len(pairs) > len(VALUES) * 3 // 4
    out = run_tool("decode", [buf.hex() for _, buf in pairs])
    for (v, _), text in zip(pairs, out):
        assert not text.startswith("error:"), (repr(v)[:200], text)
        assert same(json.loads(text), v), (repr(v)[:200], text[:200])


def builder_values():
    """Buffers only a hand-driven builder makes: typed and fixed-length
    vectors, indirect scalars, keys as values, shared strings."""
    cases = []

    b = flexbuffers.Builder()
    with b.Vector():
        b.IndirectInt(-5)
        b.IndirectUInt(7)
        b.IndirectFloat(2.5)
        b.Key("kk")
        b.TypedVectorFromElements([1, 2, 3])
        b.TypedVectorFromElements([-1, 2**40])
        b.TypedVectorFromElements([1.5, 2.25])
        b.FixedTypedVectorFromElements([1.0, 2.0, 3.0])
        b.FixedTypedVectorFromElements([1, 2, 3, 4])
        b.FixedTypedVectorFromElements([-1, 2])
    cases.append((b.Finish(), [-5, 7, 2.5, "kk", [1, 2, 3], [-1, 2**40], [1.5, 2.25], [1.0, 2.0, 3.0],
                               [1, 2, 3, 4], [-1, 2]]))

    b = flexbuffers.Builder(share_strings=True)
    with b.Vector():
        for _ in range(20):
            b.String("shared string")
        with b.Map():
            b.Key("a")
            b.UInt(2**63)
    cases.append((b.Finish(), None))  # a uint over 2^63: C refuses it

    b = flexbuffers.Builder(share_strings=True)
    with b.Vector():
        for _ in range(20):
            b.String("shared string")
    cases.append((b.Finish(), ["shared string"] * 20))

    b = flexbuffers.Builder()
    with b.Map():
        for k in ["zeta", "alpha", "mid"]:
            b.Key(k)
            with b.TypedVector():
                b.Int(1)
                b.Int(-1)
    cases.append((b.Finish(), {"zeta": [1, -1], "alpha": [1, -1], "mid": [1, -1]}))

    b = flexbuffers.Builder()
    b.Blob(b"\x00\x01")
    cases.append((b.Finish(), None))  # blobs: JSON values hold none
    return cases


def test_c_decodes_builder_only_forms():
    cases = builder_values()
    out = run_tool("decode", [buf.hex() for buf, _ in cases])
    for (buf, want), text in zip(cases, out):
        if want is None:
            assert text.startswith("error: flexbuffer:"), (buf.hex(), text)
        else:
            assert not text.startswith("error:"), (buf.hex(), text)
            assert same(json.loads(text), want), (buf.hex(), text)


def test_bad_input_is_an_error_line_not_a_crash():
    out = run_tool("decode", ["", "00", "ffffff", "0b1cc8d6787580f0e33a6534", "016c01", "69735f726f6f740001090101010168022402"])
    assert all(line.startswith("error:") for line in out), out
