"""The grader of the Ray Train & Tune lab kit (nbgrader 0.9.6), in packages by role.

``grading``    the code that can change a grade: one submission autograded by real nbgrader in
               its sandbox, the templates it is graded against, the checks before and after.
``proof``      proves the grading right both ways (round trips of solutions, learner copies and
               mutants), keeps the ledger of what was proven and plans what is left.
``classroom``  grades a class (``make grade``), exports, reviews and self-grading.
``workshop``   the room: a JupyterHub for an instructor-led class.
``bench``      measurements (``make bench``): notebook times, start-up, grading rates.
``authoring``  writing and publishing labs: text form, new labs, release, the learner pack.

Each package's docstring says what it may import; ``tests/code/test_packages.py`` holds them to it.
``grading`` imports no other package of the grader.
"""
