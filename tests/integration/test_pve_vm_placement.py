# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm placing new VMs across the lab's two nodes as PVE allows (qemu-server PVE/API2/Qemu.pm, clone_vm): a
template on the shared storage may be cloned to the freest node, a local drive (an ISO in a CD-ROM drive too) or a
non-shared target storage keeps the clone on the template's node, and a VMID another node holds moves on to another.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_vm_placement.py
"""

from __future__ import annotations

import pytest
from lab.images import qcow2
from lab_vms import client
from pve_vm_plays import TASK, inventory, sent, vm_env, vm_named, vm_play

from playbooks import run_playbook

GIB = 1 << 30
SHARED = 'nfs-shared'
SHARED_TEMPLATE = 'shared-tpl'


def shared_template(lab, vmid=9100, **drives):
    """A template with its disk and cloud-init drive on the shared storage (plus drives), made through the API."""
    api = client(lab)
    api.wait_task(
        api.create_vm('/nodes/pve1/qemu', vmid, name=SHARED_TEMPLATE, scsi0=SHARED + ':1', ide2=SHARED + ':cloudinit', net0='virtio,bridge=vmbr0', **drives), 60
    )
    api.wait_task(api.post('/nodes/pve1/qemu/%d/template' % vmid), 60)


def pve2_freest(lab):
    """pve2 gets the most free memory, so placement by memory leaves the template's node pve1."""
    lab.call(lambda: lab.pve.node_memory.update(pve1=(64 * GIB, 60 * GIB)))


def clone_targets(lab):
    return [form.get('target') for form in sent(lab, 'POST', '/clone')]


@pytest.mark.lab(time_scale=0.01)
def test_clones_of_a_template_on_shared_storage_go_to_the_node_with_most_free_memory(lab, tmp_path):
    shared_template(lab)
    pve2_freest(lab)
    run = run_playbook(
        tmp_path,
        vm_play(),
        vm_env(lab, tmp_path),
        inventory(
            {
                'pl-linked': {'image': SHARED_TEMPLATE, 'linked_clone': True},
                'pl-full': {'image': SHARED_TEMPLATE, 'storage': SHARED},
            }
        ),
    )
    assert run.rc == 0, run.stdout + run.stderr
    assert [run.one(TASK, host)['node'] for host in ('pl-linked', 'pl-full')] == ['pve2', 'pve2']
    assert vm_named(lab, 'pl-linked').node == 'pve2' and vm_named(lab, 'pl-full').node == 'pve2'
    assert clone_targets(lab) == ['pve2', 'pve2']


@pytest.mark.lab(time_scale=0.01)
def test_a_full_clone_to_a_non_shared_storage_stays_on_the_templates_node(lab, tmp_path):
    shared_template(lab)
    pve2_freest(lab)
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory({'pl-local': {'image': SHARED_TEMPLATE, 'storage': 'local-lvm'}}))
    assert run.rc == 0, run.stdout + run.stderr
    assert run.one(TASK, 'pl-local')['node'] == 'pve1' and vm_named(lab, 'pl-local').node == 'pve1'
    assert clone_targets(lab) == [None]
    assert vm_named(lab, 'pl-local').config['scsi0'].startswith('local-lvm:vm-')


@pytest.mark.lab(time_scale=0.01)
def test_a_template_with_a_local_iso_in_its_cdrom_drive_is_cloned_on_its_node(lab, tmp_path):
    lab.call(lambda: lab.pve.store_file('local', 'tools.iso', 1 << 20))
    shared_template(lab, ide0='local:iso/tools.iso,media=cdrom')
    pve2_freest(lab)
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory({'pl-iso': {'image': SHARED_TEMPLATE}}))
    assert run.rc == 0, run.stdout + run.stderr
    assert run.one(TASK, 'pl-iso')['node'] == 'pve1' and vm_named(lab, 'pl-iso').node == 'pve1'
    assert clone_targets(lab) == [None]


@pytest.mark.lab(time_scale=0.01)
def test_a_declared_node_away_from_a_template_with_a_local_iso_is_refused_before_any_clone(lab, tmp_path):
    lab.call(lambda: lab.pve.store_file('local', 'tools.iso', 1 << 20))
    shared_template(lab, ide0='local:iso/tools.iso,media=cdrom')
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory({'pl-iso': {'image': SHARED_TEMPLATE, 'node': 'pve2'}}))
    assert run.rc != 0
    message = run.one(TASK, 'pl-iso')['msg']
    assert 'node is pve2, but the source is on local storage of pve1' in message and 'set node: pve1' in message
    assert sent(lab, 'POST', '/clone') == []


@pytest.mark.lab(time_scale=0.01, clone_secs=5)
def test_parallel_creates_that_meet_vmids_taken_on_the_other_node_move_on_to_free_ones(lab, tmp_path):
    # Another controller takes the id each of the next three creates was offered, on pve2, just before them: the
    # clones' tasks and the import's POST fail as pmxcfs refuses the config, and each create moves on.
    lab.call(lambda: lab.pve.race_next_create('pve2', count=3))

    def image():
        lab.pve.store_file('local', 'noble.qcow2', 4 << 20, content='import')
        lab.pve.volume_data['local:import/noble.qcow2'] = qcow2(3584 << 20)

    lab.call(image)
    hosts = {'pl-race-%d' % n: {'image': 'ubuntu-24.04-cloud'} for n in range(3)}
    hosts['pl-race-import'] = {'image': 'local:import/noble.qcow2', 'storage': 'local-lvm', 'node': 'pve1'}
    run = run_playbook(tmp_path, vm_play(), vm_env(lab, tmp_path), inventory(hosts))
    assert run.rc == 0, run.stdout + run.stderr
    vmids = [run.one(TASK, host)['vmid'] for host in hosts]
    others = lab.call(lambda: sorted(vm.vmid for vm in lab.pve.vms if vm.name.startswith('other-controller-')))
    assert len(others) == 3 and lab.call(lambda: {lab.pve.vm(vmid).node for vmid in others}) == {'pve2'}
    assert len(set(vmids)) == len(vmids) and not set(vmids) & set(others)
    assert all(vm_named(lab, host).node == 'pve1' for host in hosts)
    attempts = len(sent(lab, 'POST', '/clone')) + len(sent(lab, 'POST', '/nodes/pve1/qemu'))
    assert attempts == len(hosts) + len(others)
