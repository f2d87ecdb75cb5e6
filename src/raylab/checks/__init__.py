"""The judging half of raylab: what the notebooks' test cells and the course's tests call to judge a
learner's work.

Each module here inspects what a learner's code did (a run's folders, Ray's actor table, what the
workers saw, the trials Tune ran) and says what is wrong in a sentence: :mod:`.common` holds the
readable ``check`` functions and :class:`~raylab.checks.common.CheckFailed`, the others the checks
of one exercise or lab (:mod:`.capstone`, :mod:`.capstone_probe`, :mod:`.driver`, :mod:`.ddp_runs`,
:mod:`.search`, :mod:`.tune`, :mod:`.separate_nodes` and the worker hooks in :mod:`.import_hooks`),
and :mod:`.crash`, which kills a worker or a trial mid-run for the failure exercises.

Modules here may import the learner half (``raylab.<module>`` at the top level); the learner half
never imports ``raylab.checks`` (``tests/code/test_raylab_halves.py`` keeps it so). Import what you
need from the module that defines it: this package re-exports nothing.
"""
