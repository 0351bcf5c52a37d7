# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pre-flight of puls.proxmox.site refuses, before any write, a machine (or a template still to build) whose CD-ROM
ISO, image to import or OS template neither exists on the cluster nor is declared by the inventory, naming the
machine, the volume and the fix; one on a storage, or declared in pve_isos, passes. pve_fleet_info says where each
volume is.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_volume_preflight.py -p no:xdist
"""

from __future__ import annotations

import lab_vms

from playbooks import run_playbook

SITE = '- import_playbook: puls.proxmox.site\n'
STOPPED = {'pve_image': str(lab_vms.TEMPLATE), 'pve_node': 'pve1', 'pve_power': 'stopped'}


def site(lab, tmp_path, hosts, name, check=False, cluster_vars=None, containers=None, templates=None):
    inventory = {
        'all': {
            'vars': dict(cluster_vars or {}),
            'children': {'pve_vms': {'hosts': hosts}, 'pve_containers': {'hosts': containers or {}}, 'pve_templates': {'hosts': templates or {}}},
        }
    }
    return run_playbook(tmp_path, SITE, lab.env, inventory=inventory, check=check, name=name)


def test_a_volume_on_no_storage_and_declared_nowhere_stops_the_run_before_any_write_naming_machine_and_volume(lab, tmp_path):
    hosts = {'web-01': dict(STOPPED, pve_cdrom='local:iso/debian-12.iso'), 'web-02': dict(STOPPED)}
    containers = {'dns-01': {'pve_container': {'image': 'local:vztmpl/alpine-3.22-default_20250617_amd64.tar.xz', 'node': 'pve1', 'storage': 'local-lvm'}}}
    # A template not built yet, whose build would import an image that is nowhere.
    templates = {'tpl-01': {'pve_image': 'local:import/noble.qcow2', 'pve_node': 'pve1', 'pve_storage': 'local-lvm'}}
    for name, check in (('plan', True), ('apply', False)):
        run = site(lab, tmp_path, hosts, name, check=check, containers=containers, templates=templates)
        assert run.rc != 0, run.stdout
        assert (
            'web-01: pve_cdrom is local:iso/debian-12.iso, which is on no storage of the cluster and which this inventory does not '
            'declare: declare it in pve_isos (or an Iso manifest) so that the run downloads it, put it on the storage first, or correct pve_cdrom'
        ) in run.stdout, run.stdout
        assert 'dns-01: pve_container.image is local:vztmpl/alpine-3.22-default_20250617_amd64.tar.xz, which is on no storage' in run.stdout
        assert 'tpl-01: pve_image is local:import/noble.qcow2, which is on no storage of the cluster' in run.stdout
    assert lab.writes() == []


def test_a_volume_on_a_storage_or_declared_in_pve_isos_passes(lab, tmp_path):
    api = lab_vms.client(lab)
    api.run_task('POST', '/nodes/pve1/storage/local/download-url', url=lab.served.url('lab-tools.iso'), content='iso', filename='lab-tools.iso')
    declared = {'filename': 'tools.iso', 'node': 'pve1', 'url': lab.served.url('lab-tools.iso')}
    hosts = {'web-01': dict(STOPPED, pve_cdrom='local:iso/lab-tools.iso'), 'web-02': dict(STOPPED, pve_cdrom='local:iso/tools.iso')}
    planned = site(lab, tmp_path, hosts, 'plan', check=True, cluster_vars={'pve_isos': [declared]})
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert planned.plans == {'tools.iso': ['create'], 'web-01': ['create'], 'web-02': ['create']}
    (fleet,) = [r['result'] for r in planned.results if r['task'].endswith('List the guests of the cluster and find the VMs already as declared')]
    assert 'pve1' in fleet['volumes']['local:iso/lab-tools.iso'] and fleet['volumes']['local:iso/tools.iso'] == []
    assert fleet['missing_volumes'] == ['local:iso/tools.iso']


def test_a_volume_on_another_nodes_storage_stops_a_machine_declared_on_its_own_node(lab, tmp_path):
    # A storage of pve1 alone (storage.cfg nodes), as a directory that is not shared is in effect: PVE takes a guest's
    # volume on the guest's node only.
    lab.call(lambda: lab.pve.storages.__setitem__('isos1', {'type': 'dir', 'path': '/srv/isos1', 'content': 'iso', 'nodes': 'pve1', 'files': set()}))
    api = lab_vms.client(lab)
    api.run_task('POST', '/nodes/pve1/storage/isos1/download-url', url=lab.served.url('lab-tools.iso'), content='iso', filename='lab-tools.iso')
    # An installer's VM, created empty (no clone source, whose own storage would tie it to a node).
    installer = {'pve_power': 'stopped', 'pve_storage': 'local-lvm', 'pve_disk_size': '4G', 'pve_cdrom': 'isos1:iso/lab-tools.iso'}
    on_pve2 = {'web-01': dict(installer, pve_node='pve2')}
    for name, check in (('plan', True), ('apply', False)):
        run = site(lab, tmp_path, on_pve2, name, check=check)
        assert run.rc != 0, run.stdout
        assert 'web-01: pve_cdrom is isos1:iso/lab-tools.iso, which is on no storage of node pve2 (only of pve1)' in run.stdout, run.stdout
    writes = len(lab.writes())
    planned = site(lab, tmp_path, {'web-01': dict(on_pve2['web-01'], pve_node='pve1')}, 'plan-pve1', check=True)
    assert planned.rc == 0, planned.stdout + planned.stderr
    assert planned.plans == {'web-01': ['create']} and len(lab.writes()) == writes
