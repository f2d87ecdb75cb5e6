# nbgrader reads ./nbgrader_config.py from the directory it runs in; the course's configuration
# lives in grader/grading/nbgrader_config.py.
load_subconfig("grader/grading/nbgrader_config.py")  # noqa: F821 - provided by traitlets
