"""pytest fixtures: `lab`, a fresh lab per test; `lab_ca`, the CA every lab of the session uses.

@pytest.mark.lab(time_scale=0.01, clone_secs=5)
def test_x(lab): ...
"""

import pytest

from .certs import LabCa
from .serving import Lab

MARKER = 'lab(time_scale=0, clone_secs=5): options of the lab fixture'
OPTIONS = ('time_scale', 'clone_secs')


@pytest.fixture(scope='session')
def lab_ca(tmp_path_factory):
    """The CA all labs of this session (or xdist worker) sign their API certificates with."""
    return LabCa.create(tmp_path_factory.mktemp('lab-ca'))


@pytest.fixture
def lab(request, tmp_path, lab_ca):
    """A started lab for one test, its state under tmp_path/lab; stopped after the test."""
    marker = request.node.get_closest_marker('lab')
    options = dict(marker.kwargs) if marker else {}
    unknown = set(options) - set(OPTIONS)
    if unknown or (marker and marker.args):
        raise pytest.UsageError('the lab marker takes {0}, not {1}'.format(', '.join(OPTIONS), sorted(unknown) or 'positional arguments'))
    with Lab(tmp_path / 'lab', ca=lab_ca, **options) as running:
        yield running
