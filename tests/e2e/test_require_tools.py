"""`make check` runs with TETHER_REQUIRE_TOOLS=1, under which conftest.py
turns a skip for want of a tool into a failure: these run a throwaway test
file with the suite's conftest as a plugin and check both outcomes."""
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

PROBE = '''
import pytest

def test_needs_a_tool():
    pytest.skip("strace is not installed")

def test_needs_root():
    pytest.skip("making a device needs root")
'''

MODULE_PROBE = '''
import pytest
pytest.skip("jj is not on PATH", allow_module_level=True)

def test_never_runs():
    pass
'''


def run_probe(tmp_path, text, require, *extra):
    probe = tmp_path / "test_probe.py"
    probe.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "TETHER_REQUIRE_TOOLS"}
    env["PYTHONPATH"] = str(HERE)
    if require:
        env["TETHER_REQUIRE_TOOLS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "conftest", "-p", "no:cacheprovider",
                           "--rootdir", str(tmp_path), *extra, str(probe)],
                          cwd=tmp_path, env=env, capture_output=True, text=True)


def test_a_missing_tool_is_a_skip_outside_make_check(tmp_path):
    p = run_probe(tmp_path, PROBE, require=False)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "2 skipped" in p.stdout


def test_a_missing_tool_fails_under_make_check(tmp_path):
    p = run_probe(tmp_path, PROBE, require=True)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "1 failed, 1 skipped" in p.stdout
    assert "skipped under TETHER_REQUIRE_TOOLS=1 (Skipped: strace is not installed)" in p.stdout


def test_a_module_skipped_for_a_tool_fails_under_make_check(tmp_path):
    p = run_probe(tmp_path, MODULE_PROBE, require=True)
    assert p.returncode != 0, p.stdout + p.stderr
    assert "jj is not on PATH" in p.stdout
    assert run_probe(tmp_path, MODULE_PROBE, require=False).returncode == 5  # all skipped: nothing collected


def test_a_missing_tool_fails_on_xdist_workers_too(tmp_path):
    """`make check` runs the suite on pytest-xdist workers: the failure is
    made in a worker's report and must reach the run's outcome."""
    p = run_probe(tmp_path, PROBE, True, "-n", "1")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "1 failed, 1 skipped" in p.stdout
    assert "skipped under TETHER_REQUIRE_TOOLS=1 (Skipped: strace is not installed)" in p.stdout
    p = run_probe(tmp_path, MODULE_PROBE, True, "-n", "1")
    assert p.returncode != 0, p.stdout + p.stderr
    assert "jj is not on PATH" in p.stdout
