"""The workshop room: a JupyterHub on one machine for an instructor-led class.

``up`` sets the room up (``make workshop``) and ``down`` takes it away (``make workshop-down``);
``accounts`` and ``state`` keep the roster and the room's folder; ``hub`` is what the hub's
configuration runs, with ``limits`` (a control group per learner) and ``confine`` (each server's
own view of the machine); ``editions`` gives each learner the English or Japanese edition;
``exchange`` is nbgrader's collect with an owner check; ``feedback``,
``hints`` and ``noise`` turn the class grader's results into the pages learners fetch;
``sizing`` measures what one learner costs the machine.

May import: the standard library, nbgrader and JupyterHub, and from the grader the course list
(``grader.grading.course``, ``grader.authoring.lab_status``), the sandbox's settings it must agree with
(``grader.grading.cgroups``, ``grader.grading.isolation``) and the notebook runner
(``grader.authoring.run_solutions``). Nothing that decides a grade imports this package: the room
hands submissions to ``make grade`` and publishes what it wrote.
"""
