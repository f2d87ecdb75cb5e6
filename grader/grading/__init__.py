"""The code that can change a grade, and nothing else.

``autograde`` grades one submission: it checks the file (``submission_check``), flags mechanisms
that can change later cells (``tamper_scan``), runs the real ``nbgrader autograde`` (configured by
``nbgrader_config`` with the preprocessors of ``nbgrader_ext``) with the learner's kernel in a
sandbox (``isolation``, ``cgroups``, ``sandbox/enter.sh``) and keeps hidden-test text out of the
feedback (``feedback_guard``); ``edition`` reads a submission's edition marker, which sets the
language of raylab's messages and of the feedback page's words, never a score. ``templates`` builds
the gradebooks a class is graded against, leaving out the demo cells that ``trim`` finds;
``course`` knows the labs, their paths and the nbgrader command; ``gradebook`` merges one
submission's scores into a class gradebook; ``pyast`` parses code safely in worker threads.

May import: the standard library, nbgrader and nbformat (and traitlets, nbgrader's configuration),
and nothing else of the grader. Every module a grading runs is part of each proof key
(``grader.proof.keys.recipe_modules``), so a change here is proven again before it grades anyone.
"""
