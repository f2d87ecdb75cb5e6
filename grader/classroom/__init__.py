"""Grading a class: ``make grade`` (``grade``), its units and progress lines (``units``,
``progress``), an nbgrader course folder as input (``course_folder``), what the instructor gets
(``exports``, ``question_scores``), the review of flagged work (``review``, ``make review``) and a
learner grading their own notebook (``self_grade``, ``make grade-mine``).

May import: the standard library, nbgrader, Ray (to grade on a cluster) and ``grader.grading``;
``course_folder`` also reads the refusals that the room's collect recorded
(``grader.workshop.exchange``). Every submission is graded by ``grader.grading.autograde``, the
path the proof proves.
"""
