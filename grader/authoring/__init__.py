"""Writing and publishing labs: the tools an author runs, none of which decides a grade.

``text`` turns a solution notebook into a plain-text form an author can edit and back;
``new_lab`` starts a lab (``make new-lab``) and ``lab_status`` says which labs are still in
progress; ``release`` generates the learner notebooks (``make release``), with their other
editions (``editions``) and those of the learner READMEs (``documents``), and ``learner_pack`` the
archive of one edition a learner takes home (``make learner-pack``); ``run_solutions`` runs every solution
notebook headless (``make check``), which the benchmarks and the room's sizing reuse.
``editions`` publishes the Japanese edition of the notebooks from ``translations/``, and
``raylab_messages`` keeps the catalogue of raylab's own messages (``src/raylab/locale``).

May import: the standard library, nbformat, nbgrader and Babel, and from the grader the course list
(``grader.grading.course``), the edition marker (``grader.grading.edition``) and the mutants files
(``grader.proof.mutants``).
"""
