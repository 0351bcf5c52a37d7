"""The ansible-core releases the collection supports (plugins/plugin_utils/_ansible_core.py): every plugin imports on the
running release (make matrix runs this file on each of tests/matrix/versions), a release outside the range fails
with the supported ones named, and meta/runtime.yml, site.yml's pre-flight and the matrix say the same range."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml
from ansible.errors import AnsibleError
from ansible.release import __version__

from ansible_collections.puls.proxmox.plugins.plugin_utils import _ansible_core

REPO = Path(__file__).resolve().parents[2]


def _plugin_modules():
    for path in sorted((REPO / 'plugins').glob('*/*.py')):
        if path.name != '__init__.py':
            yield '.'.join(('ansible_collections', 'puls', 'proxmox', 'plugins', path.parent.name, path.stem))


@pytest.mark.parametrize('name', list(_plugin_modules()))
def test_every_plugin_imports_on_the_running_ansible_core(name):
    # Nothing private to one release at import time: on 2.16 to 2.18, _in_worker.py once failed here on
    # ansible.module_utils.common.json's Direction, and on 2.21 on ansible.vars.clean's remove_internal_keys.
    importlib.import_module(name)


def test_the_running_ansible_core_is_supported():
    assert _ansible_core.supported(), __version__
    _ansible_core.require()


@pytest.mark.parametrize('version', ['2.15.13', '2.22.0', '2.22.0rc1', '3.0.0'])
def test_a_release_outside_the_range_fails_naming_the_supported_ones(version):
    with pytest.raises(AnsibleError) as raised:
        _ansible_core.require(version)
    message = str(raised.value)
    assert f'this is ansible-core {version}' in message
    assert 'supports ansible-core 2.16 to 2.21' in message
    assert 'pip install "ansible-core>=2.16,<2.22"' in message


@pytest.mark.parametrize('version', ['2.16.0', '2.18.19', '2.21.5', '2.21.0rc1'])
def test_a_release_in_the_range_passes(version):
    _ansible_core.require(version)


IN_WORKER = [('2.16.19', False), ('2.17.14', False), ('2.18.19', False), ('2.19.0', True), ('2.20.10', True), ('2.21.5', True)]


@pytest.mark.parametrize(('version', 'in_worker'), IN_WORKER)
def test_modules_run_in_the_worker_only_where_it_is_proven(version, in_worker):
    assert _ansible_core.runs_in_worker(version) is in_worker


def test_runtime_yml_the_pre_flight_and_the_matrix_name_the_same_releases():
    oldest, newest = _ansible_core.OLDEST, _ansible_core.NEWEST
    after = f'{newest[0]}.{newest[1] + 1}'
    runtime = yaml.safe_load((REPO / 'meta' / 'runtime.yml').read_text())
    assert runtime['requires_ansible'] == f'>={oldest[0]}.{oldest[1]}.0,<{after}'
    site = yaml.safe_load((REPO / 'playbooks' / 'site.yml').read_text())
    pre_flight = site[0]['tasks'][0]['ansible.builtin.assert']
    assert pre_flight['that'] == [
        f"ansible_version.full is ansible.builtin.version('{oldest[0]}.{oldest[1]}', '>=')",
        f"ansible_version.full is ansible.builtin.version('{after}', '<')",
    ]
    assert _ansible_core.SUPPORTED in pre_flight['fail_msg']
    lines = (REPO / 'tests' / 'matrix' / 'versions').read_text().splitlines()
    tested = [_ansible_core.release(line.split()[0]) for line in lines if line and not line.startswith('#')]
    assert tested == [(oldest[0], minor) for minor in range(oldest[1], newest[1] + 1)]
