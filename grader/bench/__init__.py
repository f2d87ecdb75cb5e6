"""Benchmarks: what the course costs a machine, measured by running it (never by timed tests).

``labs`` is ``make bench`` (each lab's seconds, peak memory and start-up share, learner or grading
mode); ``cells`` says where a lab's seconds went, cell by cell; ``startup`` is ``make bench-startup``
(where an empty Train run's seconds go, and the six-process floor that tells a slow day from a slow
course); ``grading`` is ``make bench-grading`` (a class graded on synthetic submissions);
``train_logs`` reads Ray Train's controller logs.

May import: the standard library, Ray, and from the grader the course list (``grader.grading.course``), the
notebook runner (``grader.authoring.run_solutions``) and, for ``grading``, the class grader and
the mutants it grades. Nothing that decides a grade imports this package.
"""
