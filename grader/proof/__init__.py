"""Proving the grading right both ways, and remembering what was proven.

``roundtrip`` grades a lab's solution, its untouched learner copy and its mutants (``mutants``,
built into class submissions by ``synthetic``) through ``grader.grading.autograde`` and judges the
results by ``roundtrip_rules``; ``requirements`` traces each exercise's stated requirements to
the checks and mutants; ``stability`` grades the same answers again and again. ``keys`` names
everything a grading depends on, ``ledger`` records proven gradings and test modules by key,
``plan`` and ``audit`` say what is missing, ``prove`` (``make prove``) fills it, ``suites`` finds
the heavy test modules, ``machine`` the machine class.

May import: the standard library, nbgrader, Ray and ``grader.grading``. Nothing that decides a
grade imports this package.
"""
