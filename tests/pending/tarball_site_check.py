# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`ansible-playbook puls.proxmox.site` from the collection installed out of its tarball, with nothing from the
source tree on any path, against the lab. PENDING: it needs playbooks/site.yml (with the reconcile role); see
tests/pending/README.md for how to switch it on."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from integration.test_tarball import BIN, build_tarball, install_tarball, tool_env

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient

TEMPLATE_VMID = '9017'  # the lab's ubuntu-24.04-cloud on pve1


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """(collections path, collection directory) of the tarball built from this checkout, installed fresh."""
    workdir = tmp_path_factory.mktemp('tarball-site')
    tarball = build_tarball(workdir / 'dist', workdir / 'home')
    return workdir / 'collections', install_tarball(tarball, workdir / 'collections', workdir / 'home')


def site(tmp_path, lab, collections_path, *extra_args):
    """ansible-playbook puls.proxmox.site in a directory of its own, as a user with only the installed copy runs it."""
    inventory = tmp_path / 'inventory.yml'
    inventory.write_text(yaml.safe_dump({'all': {
        'vars': {'pve_nodes': lab.nodes},
        'children': {'pve_vms': {'hosts': {'web1': {
            'pve_image': TEMPLATE_VMID, 'pve_node': 'pve1', 'pve_cores': 1, 'pve_memory': 1024,
            'pve_ip': '%s/24' % lab.address(1), 'pve_gateway': lab.gateway, 'pve_power': 'stopped'}}}}}}))
    env = tool_env(tmp_path / 'home', collections_path)
    env.update(lab.env, ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    return subprocess.run([str(BIN / 'ansible-playbook'), '-i', str(inventory), 'puls.proxmox.site'] + list(extra_args),
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900, check=False)


def vms_named(lab, name):
    client = PveClient(lab.url, lab.user, lab.token_name, lab.token_secret, ca_path=str(lab.cafile))
    return [vm for vm in client.get('/cluster/resources', type='vm') if vm.get('name') == name]


def test_installed_copy_carries_the_site_and_destroy_playbooks(installed):
    _collections_path, collection = installed
    assert (collection / 'playbooks' / 'site.yml').is_file()
    assert (collection / 'playbooks' / 'destroy.yml').is_file()


def test_site_from_the_installed_tarball_plans_then_applies(lab, tmp_path, installed):
    collections_path, _collection = installed
    writes = len(lab.writes())
    plan = site(tmp_path, lab, collections_path, '--check', '--diff')
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert len(lab.writes()) == writes and not vms_named(lab, 'web1')
    applied = site(tmp_path, lab, collections_path)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    (web1,) = vms_named(lab, 'web1')
    assert web1['node'] == 'pve1'
