"""Hooks in a job's worker processes: run one in every process, act only where a module is imported.

Ray runs a job's ``worker_process_setup_hook`` in every new worker process of the job, before it
knows what the process will run. The course's hooks (``raylab.checks.capstone_probe``,
``raylab.checks.separate_nodes``) patch PyTorch or Ray Train only in the processes that import them:
importing PyTorch in every process of a job would cost about a second of CPU each.
"""
from __future__ import annotations

import json
import sys

# Ray's own variable for a job's config: `ray job submit` hands it to the driver it starts, and
# ray.init reads it (ray/_private/worker.py).
JOB_CONFIG_VAR = "RAY_JOB_CONFIG_JSON_ENV_VAR"


def setup_hook_env(hook: str, env_vars: dict | None = None) -> dict:
    """Environment for a driver process: Ray runs ``hook`` (``"module.function"``) in every new
    worker process of the driver's job, with ``env_vars`` set there."""
    runtime_env = {"worker_process_setup_hook": hook}
    if env_vars:
        runtime_env["env_vars"] = {k: str(v) for k, v in env_vars.items()}
    return {JOB_CONFIG_VAR: json.dumps({"runtime_env": runtime_env})}


def after_import(name: str, action) -> None:
    """Run ``action()`` once module ``name`` is imported: now if it is, else right after its import."""
    if name in sys.modules:
        action()
    else:
        sys.meta_path.insert(0, _AfterImport(name, action))


class _AfterImport:
    """A meta-path finder that lets the other finders find ``name`` and runs ``action`` after the
    module's code ran (the loader's ``exec_module`` is wrapped for that one import, then restored)."""

    def __init__(self, name: str, action):
        self.name, self.action = name, action

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # once: the module is imported only once
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(fullname, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        loader, action = spec.loader, self.action
        if loader is None or not hasattr(loader, "exec_module"):
            return spec

        def exec_then_act(module):
            del loader.exec_module  # back to the loader's own method
            loader.exec_module(module)
            action()

        loader.exec_module = exec_then_act
        return spec
