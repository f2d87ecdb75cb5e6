"""The workshop hub's state folder and this clone's permissions, for :mod:`grader.workshop.up`.

The state folder survives a restart of the hub: ``hub/`` (root only: the hub's database, cookie
secret, config, passwords), ``course/`` (nbgrader's course folder, instructors' group),
``exchange/`` (nbgrader's exchange; ``exchange-ja/``: the Japanese edition's release), ``learner-config/`` and ``instructor-config/`` (the Jupyter
configuration each side's servers start with). Learners may read only the learner's part of the
clone (:data:`LEARNER_VISIBLE`): :func:`close_answer_key` closes the rest to other users.
"""
from __future__ import annotations

import grp
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.workshop import editions
from grader.workshop.accounts import Roster

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
COURSE_ID = "ray-train-tune"
LEARNER_JUPYTER_CONFIG = ROOT / "workshop" / "learner-jupyter-config"
DEFAULT_STATE = Path(os.environ.get("RAYLAB_WORKSHOP_STATE", "/srv/raylab-workshop"))
INSTRUCTOR_GROUP = "raylab-instructors"
EXCHANGE_MODULE = "raylab_workshop_exchange"  # grader/workshop/exchange.py, as the instructors' servers import it
INSTRUCTOR_CSP = "frame-ancestors 'self'"
# What a learner may read in this clone (top-level names); everything else is closed to others.
LEARNER_VISIBLE = {".venv", "src", "notebooks", "workshop", "README.md", "README.ja.md", "Makefile", "pyproject.toml",
                   "requirements.txt", "constraints.txt", "environment.yml", ".gitignore"}
def close_answer_key(root: Path = ROOT) -> dict[str, int]:
    """Remove the "others" permissions from every top-level entry of the clone a learner must not
    read; return the old modes (path -> mode) of those changed."""
    changed = {}
    for entry in sorted(root.iterdir()):
        if entry.name in LEARNER_VISIBLE or entry.is_symlink():
            continue
        mode = stat.S_IMODE(entry.stat().st_mode)
        if mode & 0o007:
            os.chmod(entry, mode & ~0o007)
            changed[str(entry)] = mode
    return changed


def blocked_for_others(path: Path) -> Path | None:
    """The first of ``/``, ..., ``path`` that other users cannot enter or run (no o+x), or None."""
    path = path.resolve()
    for step in [*reversed(path.parents), path]:
        if not step.stat().st_mode & stat.S_IXOTH:
            return step
    return None


def _usable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can run ``path`` (it and every folder above it)."""
    return blocked_for_others(path) is None


def require_clone_reachable(root: Path = ROOT) -> None:
    """Learners' servers import ``raylab`` and the course's packages from this clone: stop with a
    clear message when other users cannot enter it (a clone in root's home, or in a 0700 folder
    such as ``mktemp -d`` makes), instead of servers that fail to start."""
    blocked = blocked_for_others(root / "src")
    if blocked is not None:
        raise SystemExit(
            f"learners' servers run the course from this clone ({root}), but other users cannot "
            f"enter {blocked} (it lacks o+x). Clone the course into a folder every user may enter "
            f"(/srv, /opt), or run `chmod o+x {blocked}`.")


def learner_python(state: "State") -> Path:
    """The interpreter the users' servers and kernels run: the course venv's when everyone may run
    it; else (a venv built from a Python under root's home, like pyenv's) a small venv in the state
    folder made from the system's python3.X of the same version, that adds the course venv's
    packages (``site.addsitedir`` in a .pth file, so the editable ``raylab`` install comes too)."""
    if _usable_by_others(VENV_BIN / "python"):
        return VENV_BIN / "python"
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = Path("/usr/bin") / version
    if not system.exists() or not _usable_by_others(system):
        raise SystemExit(f"{VENV_BIN / 'python'} cannot be run by other users and there is no "
                         f"{system}: rebuild the venv with `make setup PYTHON=<a python3 every user may run>`")
    venv = state.root / "venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([str(system), "-m", "venv", "--without-pip", str(venv)], check=True,
                       capture_output=True, timeout=120)
    site_packages = Path(sysconfig_path("purelib"))
    pth = venv / "lib" / version / "site-packages" / "raylab-course.pth"
    pth.write_text(f"import site; site.addsitedir({str(site_packages)!r})\n")
    return python


def sysconfig_path(name: str) -> str:
    import sysconfig

    return sysconfig.get_paths()[name]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mkdir(path: Path, mode: int, gid: int = 0) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, 0, gid)
    os.chmod(path, mode)
    return path


@dataclass
class State:
    """The state folder's layout."""
    root: Path
    instructor_group: str = INSTRUCTOR_GROUP

    @property
    def hub(self) -> Path:
        return self.root / "hub"

    @property
    def course(self) -> Path:
        return self.root / "course"

    @property
    def exchange(self) -> Path:
        return self.root / "exchange"

    @property
    def exchange_ja(self) -> Path:
        """The Japanese edition's release, read by Japanese learners' fetch (grader.workshop.editions)."""
        return self.root / "exchange-ja"

    @property
    def learner_config(self) -> Path:
        return self.root / "learner-config"

    @property
    def instructor_config(self) -> Path:
        return self.root / "instructor-config"


CREATED = "created.json"  # in the hub folder: the accounts, group and modes make workshop-down undoes


def record_created(state: State, *, users: list[str], group: str | None, closed: dict[str, int]) -> None:
    """Add to the hub folder's record of what set-up created (a restart creates nothing new, and
    keeps the accounts and the clone's first modes recorded by the first start)."""
    path = state.hub / CREATED
    record = json.loads(path.read_text()) if path.exists() else {"users": [], "groups": [], "closed": {}}
    record["users"] += [name for name in users if name not in record["users"]]
    if group and group not in record["groups"]:
        record["groups"].append(group)
    for entry, mode in closed.items():
        record["closed"].setdefault(entry, mode)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle, indent=1)


def _nbgrader_exchange_config(state: State) -> str:
    # Validate runs the notebook: Ray start-up and a Train fit take tens of seconds on 2 cores,
    # past nbgrader's default of 30 s a cell (the course's own timeouts, grader/grading/nbgrader_config.py).
    return (f"c = get_config()  # noqa: F821\n"
            f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
            f"c.Exchange.root = {str(state.exchange)!r}\n"
            "c.Execute.timeout = 300\n"
            "c.Execute.startup_timeout = 120\n"
            "c.Execute.interrupt_on_timeout = True\n")


def lay_out(state: State, roster: Roster) -> None:
    _mkdir(state.root, 0o755)
    _mkdir(state.hub, 0o700)
    _mkdir(state.course, 0o2770, grp.getgrnam(state.instructor_group).gr_gid)
    _mkdir(state.exchange, 0o1777)
    _mkdir(state.exchange_ja, 0o1777)
    # Learners: the learner JupyterLab (no Create Assignment, no formgrader, no course list) and
    # nbgrader's course id + exchange, for the Assignments tab and Validate.
    if state.learner_config.exists():
        shutil.rmtree(state.learner_config)
    shutil.copytree(LEARNER_JUPYTER_CONFIG, state.learner_config)
    (state.learner_config / "nbgrader_config.py").write_text(_nbgrader_exchange_config(state))
    (state.learner_config / "ja" / "nbgrader_config.py").write_text(editions.fetch_config(state.exchange_ja))
    server = state.learner_config / "jupyter_server_config.json"
    server.write_text(json.dumps(_with_terminal_shell(json.loads(server.read_text())), indent=2))
    for path in [state.learner_config, *state.learner_config.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    # Instructors: nbgrader's defaults (formgrader on) with this course folder, a collect that
    # refuses submissions written by another account, and no Autograde outside the sandbox
    # (grader.workshop.exchange, copied where instructors may import it: this clone is closed).
    course_config = (_nbgrader_exchange_config(state)
                     + f"c.CourseDirectory.root = {str(state.course)!r}\n"
                     + f"c.CourseDirectory.db_url = 'sqlite:///{state.course}/gradebook.db'\n"
                     + "c.CourseDirectory.groupshared = True\n"
                     + f"import sys\nsys.path.insert(0, {str(state.instructor_config)!r})\n"
                     + f"c.ExchangeFactory.collect = '{EXCHANGE_MODULE}.CheckedCollect'\n"
                     + f"c.Autograde.autograde_preprocessors = ['{EXCHANGE_MODULE}.RefuseAutograde']\n"
                     + f"c.GenerateFeedback.preprocessors = ['{EXCHANGE_MODULE}.RefuseGenerateFeedback']\n")
    _mkdir(state.instructor_config, 0o750, grp.getgrnam(state.instructor_group).gr_gid)
    (state.instructor_config / "nbgrader_config.py").write_text(course_config)
    (state.course / "nbgrader_config.py").write_text(course_config)
    module = state.instructor_config / f"{EXCHANGE_MODULE}.py"
    shutil.copy(ROOT / "grader" / "workshop" / "exchange.py", module)
    os.chmod(module, 0o644)
    # The formgrader tab of JupyterLab frames the instructor's own formgrader page: JupyterHub's
    # single-user server forbids every frame ("frame-ancestors 'none'"); allow its own origin.
    (state.instructor_config / "jupyter_server_config.json").write_text(json.dumps(
        _with_terminal_shell({"ServerApp": {"tornado_settings": {"headers": {"Content-Security-Policy": INSTRUCTOR_CSP}}}})))


def _with_terminal_shell(config: dict) -> dict:
    """A terminal runs bash as is, not a login shell: Debian's /etc/profile would replace the PATH
    the hub gives (the course's python, ray and nbgrader first)."""
    config.setdefault("ServerApp", {})["terminado_settings"] = {"shell_command": ["/bin/bash"]}
    return config
