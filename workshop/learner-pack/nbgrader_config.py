# nbgrader settings for Validate in the learner pack (`make lab` runs JupyterLab from this folder).
c = get_config()  # noqa: F821 - provided by traitlets when it loads this file

c.CourseDirectory.course_id = "ray-train-tune"
# Ray start-up and a Train fit each take tens of seconds on 2 cores; nbgrader's default is 30 s.
c.Execute.timeout = 300
c.Execute.startup_timeout = 120
c.Execute.interrupt_on_timeout = True
