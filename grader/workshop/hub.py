"""What the workshop's ``jupyterhub_config.py`` configures (written by :mod:`grader.workshop.up`).

- PAM login (JupyterHub's default authenticator) for the roster's accounts only; instructors are
  the hub's admins. State (sqlite database, cookie secret, proxy pid) lives in the state folder's
  ``hub/``, so a restarted hub keeps its users and sessions.
- Each user's server (``jupyterhub.singleuser`` with the course's packages, run by the venv's
  python, or :func:`grader.workshop.learner_python` where namespaces are refused) runs as that system user, from their home folder (instructors: from the course folder, for formgrader).
- Learners get the learner JupyterLab (``workshop/learner-jupyter-config``: no Create Assignment,
  no formgrader, no course list) and nbgrader's exchange for the Assignments tab and Validate, in
  the edition they pick on the spawn page (:mod:`grader.workshop.editions`: English or Japanese).
- Every server gets its own Ray temp folder (``RAY_TMPDIR``, read by Ray 2.58.0's
  ``get_default_system_temp_dir``; Ray's default ``/tmp/ray`` is one folder for the whole machine)
  and ``TMPDIR`` in the user's home (0700), and Ray's token authentication:
  ``RAYLAB_RAY_AUTH=token`` + ``RAY_AUTH_MODE=token`` + a token file only that user can read.
- Every server runs in a mount namespace of its own (:mod:`grader.workshop.confine`): a learner's
  sees only the system, their home, the course's Python and the exchange, with private ``/tmp``
  and a ``hidepid=2`` ``/proc``; everyone's runs the course venv's own interpreter.
- Every learner's server runs in that learner's control group with CPU, memory and task limits,
  and with RLIMIT_NPROC (:mod:`grader.workshop.limits`; :class:`WorkshopSpawner`). Instructors'
  servers are not limited (they grade a class from there).
"""
from __future__ import annotations

import os
import pwd
import secrets
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Dict, Set

from grader.workshop import confine, editions
from grader.workshop.limits import LearnerGroup, Limits, describe


class WorkshopSpawner(LocalProcessSpawner):
    """JupyterHub's local-process spawner, with each learner's server started inside the
    learner's control group and under RLIMIT_NPROC (joined in ``preexec_fn``, still as root)."""

    learner_limits = Dict(config=True, help="grader.workshop.limits.Limits fields; empty: no limits")
    limited_users = Set(config=True, help="the users whose servers get the limits (the learners)")

    confine_shown = Dict(config=True, help="'learner'/'instructor' -> paths their servers see "
                         "(grader.workshop.confine); empty: no mount namespace")

    def make_preexec_fn(self, name):
        drop_root = super().make_preexec_fn(name)
        if self.confine_shown:
            home = pwd.getpwnam(name).pw_dir
            plan = (confine.learner_plan(home, self.confine_shown["learner"]) if name in self.limited_users
                    else confine.instructor_plan(home, self.confine_shown["instructor"]))
            drop_root = confine.preexec(plan, then=drop_root)
        if name not in self.limited_users or not self.learner_limits:
            return drop_root
        group = LearnerGroup(name, Limits(**self.learner_limits)).create()
        (self.log.warning if group.missing else self.log.info)("[workshop] limits of %s", describe(group))
        return group.preexec(drop_root)


def edition_form(spawner) -> str:
    """The spawn page: learners choose their edition (their last choice selected); instructors
    start as before, with no form."""
    if spawner.user.name not in spawner.limited_users:
        return ""
    return editions.options_form(editions.chosen(spawner.orm_spawner.user_options))


def _user_dir(path: Path, uid: int, gid: int, mode: int = 0o700) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, gid)
    os.chmod(path, mode)
    return path


def user_environment(name: str, settings: dict, edition: str = editions.DEFAULT) -> dict:
    """The environment of ``name``'s single-user server (creates its per-user folders); a learner's
    ``edition`` adds its layer of the learner configuration (grader.workshop.editions)."""
    entry = pwd.getpwnam(name)
    home = Path(entry.pw_dir)
    tmp = _user_dir(home / ".raylab-tmp", entry.pw_uid, entry.pw_gid)
    token_dir = _user_dir(home / ".ray", entry.pw_uid, entry.pw_gid)
    token = token_dir / "auth_token"
    if not token.exists() or not token.read_text().strip():
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
    os.chown(token, entry.pw_uid, entry.pw_gid)
    os.chmod(token, 0o600)
    instructor = name in settings["instructors"]
    return {
        "PATH": f"{os.path.dirname(settings['python'])}:/usr/local/bin:/usr/bin:/bin",
        # The role's configuration first, then the course venv's (its enabled server extensions
        # and lab extensions), which a server run by another interpreter would not find.
        "JUPYTER_CONFIG_PATH": os.pathsep.join([
            *([settings["instructor_config"]] if instructor
              else editions.config_path(edition, settings["learner_config"])),
            os.path.join(settings["venv_prefix"], "etc", "jupyter")]),
        "JUPYTER_PATH": os.path.join(settings["venv_prefix"], "share", "jupyter"),
        "RAY_TMPDIR": str(tmp),
        "TMPDIR": str(tmp),
        "RAYLAB_RAY_AUTH": "token",
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN_PATH": str(token),
        "RAYLAB_WORKSHOP": "1",
        "RAYLAB_LANG": edition,
    }


def configure(c, settings: dict) -> None:
    hub_dir = settings["hub_dir"]
    c.JupyterHub.ip = settings["ip"]
    c.JupyterHub.port = settings["port"]
    c.JupyterHub.hub_ip = "127.0.0.1"
    c.JupyterHub.hub_port = settings["hub_port"]
    c.JupyterHub.db_url = f"sqlite:///{hub_dir}/jupyterhub.sqlite"
    c.JupyterHub.cookie_secret_file = f"{hub_dir}/jupyterhub_cookie_secret"
    c.JupyterHub.pid_file = f"{hub_dir}/jupyterhub.pid"
    c.JupyterHub.cleanup_servers = True
    if settings.get("ssl_cert"):
        c.JupyterHub.ssl_cert = settings["ssl_cert"]
        c.JupyterHub.ssl_key = settings["ssl_key"]
    c.ConfigurableHTTPProxy.command = [settings["proxy"]]
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings['proxy_api_port']}"
    c.ConfigurableHTTPProxy.pid_file = f"{hub_dir}/proxy.pid"

    c.JupyterHub.authenticator_class = "pam"
    c.PAMAuthenticator.open_sessions = False
    c.Authenticator.allowed_users = set(settings["learners"]) | set(settings["instructors"])
    c.Authenticator.admin_users = set(settings["instructors"])

    c.JupyterHub.spawner_class = WorkshopSpawner
    c.WorkshopSpawner.learner_limits = settings.get("limits") or {}
    c.WorkshopSpawner.limited_users = set(settings["learners"])
    c.WorkshopSpawner.confine_shown = settings.get("confine_shown") or {}
    c.WorkshopSpawner.options_form = edition_form
    c.WorkshopSpawner.options_from_form = editions.options_from_form
    c.Spawner.cmd = [settings["python"], "-m", "jupyterhub.singleuser"]
    c.Spawner.default_url = "/lab"
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 120

    def pre_spawn_hook(spawner):
        name = spawner.user.name
        edition = editions.chosen(spawner.user_options) if name in settings["learners"] else editions.DEFAULT
        spawner.environment = {**spawner.environment, **user_environment(name, settings, edition)}
        spawner.notebook_dir = (settings["course"] if name in settings["instructors"]
                                else pwd.getpwnam(name).pw_dir)

    c.Spawner.pre_spawn_hook = pre_spawn_hook
