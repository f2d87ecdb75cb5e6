"""Grading configuration and tools for the Ray Train & Tune lab kit (nbgrader 0.9.6)."""
