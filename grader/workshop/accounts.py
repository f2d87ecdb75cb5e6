"""The room's people: the roster file and the system accounts ``make workshop`` creates from it."""
from __future__ import annotations

import grp
import os
import pwd
import re
import secrets
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

TEST_PASSWORD_ENV = "RAYLAB_WORKSHOP_TEST_PASSWORD"  # test-only: one known password for every new account
_LOGIN = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


@dataclass
class Roster:
    learners: list[str] = field(default_factory=list)
    instructors: list[str] = field(default_factory=list)

    @property
    def everyone(self) -> list[str]:
        return self.instructors + self.learners


def read_roster(path: str | os.PathLike) -> Roster:
    """One learner login a line; ``instructor: login`` for instructors; ``#`` starts a comment."""
    roster = Roster()
    for number, raw in enumerate(Path(path).read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        kind, _, name = line.rpartition(":")
        kind, name = kind.strip().lower(), name.strip()
        if kind not in ("", "instructor", "learner"):
            raise ValueError(f"{path}:{number}: unknown role {kind!r} (use 'instructor: login')")
        if not _LOGIN.fullmatch(name) or name == "root":
            raise ValueError(f"{path}:{number}: {name!r} is not a valid login name")
        if name in roster.everyone:
            raise ValueError(f"{path}:{number}: {name} is listed twice")
        (roster.instructors if kind == "instructor" else roster.learners).append(name)
    if not roster.learners and not roster.instructors:
        raise ValueError(f"{path}: no one on the roster")
    return roster


def user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def ensure_group(name: str) -> int:
    try:
        return grp.getgrnam(name).gr_gid
    except KeyError:
        subprocess.run(["groupadd", name], check=True, capture_output=True, timeout=60)
        return grp.getgrnam(name).gr_gid


def ensure_user(name: str, groups: tuple[str, ...] = ()) -> str | None:
    """Create system user ``name`` (home 0700) unless it exists; return its new password (None
    for an existing user, whose password is left alone)."""
    if user_exists(name):
        for group in groups:
            subprocess.run(["usermod", "--append", "--groups", group, name], capture_output=True,
                           timeout=60, check=True)
        home = Path(pwd.getpwnam(name).pw_dir)
        if home.is_dir():
            os.chmod(home, 0o700)
        return None
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--user-group",
                    *(["--groups", ",".join(groups)] if groups else []), name],
                   check=True, capture_output=True, timeout=60)
    os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
    password = os.environ.get(TEST_PASSWORD_ENV) or secrets.token_urlsafe(12)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True,
                   capture_output=True, timeout=60)
    return password
