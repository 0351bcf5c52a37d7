"""Shared by every test directory: the lab fixtures (tests/lab/fixtures.py)."""

from lab.fixtures import MARKER, lab, lab_ca

# pytest finds fixtures by name in this module's namespace.
__all__ = ['lab', 'lab_ca']


def pytest_configure(config):
    config.addinivalue_line('markers', MARKER)


def pytest_collection_modifyitems(config, items):
    """The longest tests first (marker slow(minutes=N), N as measured with --durations): with make integration's
    --maxschedchunk 1, pytest-xdist hands each worker the next test in this order as it frees up, so the long ones
    start early on both workers and the short ones fill the gaps, instead of one long test running alone at the end."""
    items.sort(key=lambda item: -(item.get_closest_marker('slow').kwargs['minutes'] if item.get_closest_marker('slow') else 0))
