"""Shared by every test directory: the lab fixtures (tests/lab/fixtures.py)."""

from lab.fixtures import MARKER, lab, lab_ca

# pytest finds fixtures by name in this module's namespace.
__all__ = ['lab', 'lab_ca']


def pytest_configure(config):
    config.addinivalue_line('markers', MARKER)
