"""Hostile clones (hostile.py) against the commands and flags of issue 12:
promote, merge, restore, drop, pull, abandon, undo, upgrade, new --adopt,
verify --deep, commit --force and gc --prune-bookmarks. Each case is an
attack test_hostile_clone.py or test_hostile_vcs.py makes on the older
commands, or one only the new ones meet (a crafted journal entry undo
would act on, a plan handed over in the clone, a layout from the future,
a store drop --delete-store did not create, a repository configuration
that runs programs when a VCS writes); every run is traced: nothing
executed, nothing contacted, nothing outside the dataset written, the trap
never read."""
import json
import os
import re
import shutil
import subprocess

import pytest

from hostile import Sandbox, free_port
from test_hostile_clone import LINK_CASES, bend, kind_message, link_message

if not shutil.which("strace"):  # scripts/install-deps installs it
    pytest.skip("strace is not installed", allow_module_level=True)

# Every new command and flag, in a form that does real work.
LANDING = [
    ("promote",),
    ("promote", "--dry-run"),
    ("merge",),
    ("restore",),
    ("restore", "-r", "HEAD", "code"),
    ("drop", "code", "--dry-run"),
    ("drop", "code", "--delete-store"),
    ("pull",),
    ("abandon", "HEAD"),
    ("undo", "--dry-run"),
    ("undo",),
    ("upgrade", "--dry-run"),
    ("upgrade",),
    ("upgrade", "--all-history", "--yes"),
    ("new", "--adopt"),
    ("verify", "--deep"),
    ("commit", "-m", "hostile", "--force"),
    ("gc", "--prune-bookmarks"),
]


@pytest.mark.parametrize("case", LINK_CASES)
def test_a_committed_symlink_is_refused_by_every_new_command(tmp_path, case):
    sb = Sandbox(tmp_path)
    a = sb.attacker()
    rel = bend(sb, a, case)
    a.commit(f"hostile: {case}")
    clone = sb.clone(a)
    msg = link_message(clone, rel)
    if case == "objects-loop":
        msg = msg.replace(re.escape("[abc]"), "[abc]")
    sb.run_all(clone, rc=3, message=msg, commands=LANDING, leaks=case == LINK_CASES[0])


SPECIAL = [("tether.toml", "mkfifo", "a FIFO"), (".tether/objects/code.toml", "mkfifo", "a FIFO"),
           (".tether/workspace.toml", "mkfifo", "a FIFO"), (".tether/lock", "mksocket", "a socket"),
           (".tether/secrets.toml", "mkdir", "a directory")]


@pytest.mark.parametrize("rel,make,kind", SPECIAL, ids=[f"{r}-{m}" for r, m, _ in SPECIAL])
def test_a_special_file_is_refused_by_every_new_command_without_blocking(tmp_path, rel, make, kind):
    sb = Sandbox(tmp_path)
    clone = sb.clone(sb.attacker())
    target = clone / rel
    if target.exists():
        target.unlink()
    (os.mkdir if make == "mkdir" else getattr(sb, make))(target)
    sb.run_all(clone, rc=3, message=kind_message(clone, rel, kind), commands=LANDING, leaks=False)
