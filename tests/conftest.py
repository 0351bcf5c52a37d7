"""Shared by every test directory: the lab fixtures (tests/lab/fixtures.py)."""

from lab.fixtures import MARKER, lab, lab_ca  # noqa: F401 - pytest finds the fixtures by name here


def pytest_configure(config):
    config.addinivalue_line('markers', MARKER)
