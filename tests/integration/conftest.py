"""Fixtures shared by several integration test files."""

import pytest
from integration.test_tarball import build_tarball, install_tarball


@pytest.fixture(scope='module')
def collections_path(tmp_path_factory):
    """The execution environment's collections: the tarball built from this checkout, installed fresh."""
    workdir = tmp_path_factory.mktemp('awx-ee')
    tarball = build_tarball(workdir / 'dist', workdir / 'home')
    install_tarball(tarball, workdir / 'collections', workdir / 'home')
    return workdir / 'collections'
