"""Driving a byte store from a test: `tests/tools/store-tool URI session`
(built by meson in the build's tests/ directory) reads JSON commands and
answers each with one JSON line (tests/tools/store_session.c)."""
import json
import os
import subprocess
from pathlib import Path

from conftest import SANITIZER_MARKERS, TETHER_BIN

BUILD = Path(TETHER_BIN).resolve().parent
STORE_TOOL = next((str(p) for p in (BUILD / "tests" / "store-tool", BUILD / "store-tool") if p.exists()), None)


def drive(uri, commands, env, options=None, timeout=120):
    """Run the commands against the store at uri in one store-tool process;
    the list of its answers (one per command, or one for a failed open)."""
    assert STORE_TOOL, f"store-tool is not built beside {TETHER_BIN}"
    env = dict(env)
    env.setdefault("TETHER_MODULE_PATH", str(BUILD))
    argv = [STORE_TOOL] + (["--options", json.dumps(options)] if options is not None else []) + [uri, "session"]
    stdin = "".join(json.dumps(c) + "\n" for c in commands)
    p = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=timeout)
    for marker in SANITIZER_MARKERS:
        assert marker not in p.stderr, p.stderr
    answers = [json.loads(line) for line in p.stdout.splitlines()]
    assert answers, f"store-tool said nothing (exit {p.returncode}): {p.stderr}"
    return answers


def one(uri, command, env, options=None):
    """The answer to a single command (or to the failed open)."""
    return drive(uri, [command], env, options)[0]


def hexof(b):
    return b.hex() if isinstance(b, bytes) else b.encode().hex()
