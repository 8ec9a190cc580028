"""Large files are hashed by OpenSSL's libcrypto, loaded with dlopen only
once a scan has enough large bytes to pay for it (src/util/sha256_fast.h);
a status of small files never loads it; TETHER_NO_LIBCRYPTO=1 hashes with
Nettle instead, and every digest is the same either way.

Which libraries the process loads is read from the dynamic loader itself
(LD_DEBUG=libs), not from anything tether reports."""
import ctypes
import json
import shutil

import pytest

from conftest import expected_dir_state

BIG = 33 << 20  # over TT_SHA256_LOAD_AFTER_BYTES (32 MiB), in one file


def libcrypto_installed():
    try:
        ctypes.CDLL("libcrypto.so.3")
        return True
    except OSError:
        return False


def cold_status(ds, extra_env=None):
    """`tether status --snapshot --json` with the hash cache removed (so
    every file is read); returns (report, whether libcrypto was loaded)."""
    shutil.rmtree(ds.root / ".tether" / "cache", ignore_errors=True)
    p = ds.tether("status", "--snapshot", "--json", env={"LD_DEBUG": "libs", **(extra_env or {})})
    loaded = any("calling init" in line and "libcrypto.so" in line for line in p.stderr.splitlines())
    return json.loads(p.stdout), loaded


def current_of(report, key):
    return next(o for o in report["objects"] if o["key"] == key)["current"]


@pytest.fixture
def big(ds):
    """A directory object holding one large file of varied bytes and a few
    small ones, committed."""
    block = bytes(range(256)) * 4096  # 1 MiB, not one repeated byte
    data = b"".join(block[k:] + block[:k] for k in range(BIG >> 20)) + b"tail"
    ds.write("data/obj/big.bin", data)
    ds.write("data/obj/a.txt", "a\n")
    ds.write("data/obj/empty", b"")
    ds.tether("add", "raw", "data/obj", "--kind", "file")
    ds.tether("commit", "-m", "big")
    return ds


def test_large_file_by_libcrypto_same_digest(big):
    want = expected_dir_state(big.p("data/obj"))
    fast, loaded = cold_status(big)
    assert loaded == libcrypto_installed()
    assert current_of(fast, "raw") == want
    assert fast["clean"] is True

    slow, loaded = cold_status(big, {"TETHER_NO_LIBCRYPTO": "1"})
    assert not loaded
    assert current_of(slow, "raw") == want
    assert slow["clean"] is True


def test_small_files_never_load_libcrypto(plates):
    plates.tether("commit", "-m", "plates")
    report, loaded = cold_status(plates)
    assert not loaded
    assert report["clean"] is True
