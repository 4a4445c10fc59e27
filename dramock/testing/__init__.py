"""Test helpers for driver authors (and dramock's own suite): a `dramock` server process on a free port, and the
pytest plugin (`dramock.testing.pytest_plugin`, installed with dramock as a `pytest11` entry point) whose
fixtures are `dramock_cluster` and `dramock_namespace`.

Nothing here imports more than the standard library at import time: pytest loads the plugin in every run of a
venv that has dramock installed.
"""
