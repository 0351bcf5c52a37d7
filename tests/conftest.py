"""Shared by every test directory: the lab fixtures (tests/lab/fixtures.py)."""

from lab.fixtures import MARKER, lab, lab_ca

# pytest finds fixtures by name in this module's namespace.
__all__ = ['lab', 'lab_ca']


def pytest_configure(config):
    config.addinivalue_line('markers', MARKER)


def pytest_collection_modifyitems(config, items):
    """Tests marked slow (several minutes each) first: pytest-xdist hands out tests in collection order, so the
    longest start at once on both workers and the short ones fill the gaps, rather than one long test running alone
    at the end while the other worker idles."""
    items.sort(key=lambda item: item.get_closest_marker('slow') is None)
