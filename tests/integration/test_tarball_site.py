# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection as a release gives it to users: `ansible-playbook puls.proxmox.site` from the collection installed
out of its tarball, with nothing from the source tree on any path, against the lab (test_tarball.py checks what the
tarball carries; this runs it); and the changelog `antsibull-changelog release` writes for it."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
import yaml
from integration.test_awx_runner import TEMPLATE_VMID, vms_named
from integration.test_tarball import BIN, DOCUMENTED_PLUGIN_TYPES, REPO, build_tarball, checkout_modules, checkout_plugins, install_tarball, run, tool_env


@pytest.fixture
def collections_path(tmp_path):
    """The only collections path: the tarball built from this checkout, installed fresh."""
    install_tarball(build_tarball(tmp_path / 'dist', tmp_path / 'build-home'), tmp_path / 'collections', tmp_path / 'build-home')
    return tmp_path / 'collections'


def test_site_from_the_installed_tarball_creates_the_declared_vm(lab, tmp_path, collections_path):
    """ansible-playbook puls.proxmox.site in a directory of its own, as a user with only the installed copy runs it."""
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(
        yaml.safe_dump(
            {
                'all': {
                    'vars': {'pve_nodes': lab.nodes},
                    'children': {
                        'pve_vms': {
                            'hosts': {
                                'web1': {
                                    'pve_image': TEMPLATE_VMID,
                                    'pve_node': 'pve1',
                                    'pve_cores': 1,
                                    'pve_memory': 1024,
                                    'pve_ip': '%s/24' % lab.address(1),
                                    'pve_gateway': lab.gateway,
                                    'pve_power': 'stopped',
                                }
                            }
                        }
                    },
                }
            }
        )
    )
    env = tool_env(tmp_path / 'home', collections_path)
    env.update(lab.env, ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    applied = subprocess.run(
        [str(BIN / 'ansible-playbook'), '-i', str(inventory), 'puls.proxmox.site'],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert re.search(r'^web1\s+: ok=\d+\s+changed=[1-9]', applied.stdout, re.M), applied.stdout
    (web1,) = vms_named(lab, 'web1')
    assert web1['node'] == 'pve1' and web1['status'] == 'stopped'


def test_the_release_changelog_announces_every_module_plugin_role_and_playbook(tmp_path):
    """antsibull-changelog release on a copy of the checkout: what it finds by itself plus the fragments' additions."""
    copy = tmp_path / 'ansible_collections' / 'puls' / 'proxmox'
    for top in ('plugins', 'roles', 'playbooks', 'meta', 'changelogs'):
        shutil.copytree(REPO / top, copy / top, ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(REPO / 'galaxy.yml', copy)
    version = yaml.safe_load((REPO / 'galaxy.yml').read_text())['version']
    run([BIN / 'antsibull-changelog', 'release', '--version', version], copy, tool_env(tmp_path / 'home', tmp_path))
    release = yaml.safe_load((copy / 'changelogs' / 'changelog.yaml').read_text())['releases'][version]

    announced = {('module', entry['name']) for entry in release.get('modules', [])}
    for kind in ('plugins', 'objects'):
        announced |= {(kind_type, entry['name']) for kind_type, entries in release.get(kind, {}).items() for entry in entries}
    declared = {('module', name) for name in checkout_modules()}
    for directory, plugin_type in dict(DOCUMENTED_PLUGIN_TYPES, filter='filter', test='test').items():
        if (REPO / 'plugins' / directory).is_dir():
            declared |= {(plugin_type, name) for name in checkout_plugins(directory)}
    declared |= {('role', path.name) for path in (REPO / 'roles').iterdir() if path.is_dir()}
    declared |= {('playbook', path.stem) for path in (REPO / 'playbooks').glob('*.yml')}
    assert not declared - announced, 'new in this release but not in its changelog: %s' % sorted(declared - announced)
