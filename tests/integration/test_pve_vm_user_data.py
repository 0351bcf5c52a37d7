# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_vm's user_data through real ansible-playbook runs against the lab: a NoCloud seed ISO whose name and
instance-id hold its content hash, attached in place of PVE's cloud-init drive, replaced when the content changes,
deleted with the VM.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_vm_user_data.py -n 2
"""

from __future__ import annotations

import re

import pytest
from lab.images import qcow2
from lab.seed import SHARED_STORAGE
from pve_vm_plays import TASK, cluster_vms, inventory, vm_env, vm_named, vm_play
from uploads import assert_pve_ordered_upload

from playbooks import four_runs, run_playbook

TEMPLATE = 9017
FIRST = '#cloud-config\npackages: [nginx]\nruncmd:\n  - echo first-user-data-secret\n'
SECOND = '#cloud-config\npackages: [nginx, jq]\nruncmd:\n  - echo second-user-data-secret\n'


def seed_of(lab, name):
    value = vm_named(lab, name).config['ide2']
    volid, _comma, props = value.partition(',')
    assert 'media=cdrom' in props.split(','), value
    return volid


def iso_volumes(lab, storage=SHARED_STORAGE):
    return lab.call(lambda: sorted(f'{storage}:iso/{name}' for name in lab.pve.storages[storage]['files']))


@pytest.mark.lab(time_scale=0.01)
def test_user_data_is_delivered_on_a_seed_iso_replaced_when_it_changes_and_deleted_with_the_vm(lab, tmp_path):
    def add_image():
        lab.pve.store_file('local', 'noble.qcow2', 4 << 20, content='import')
        lab.pve.volume_data['local:import/noble.qcow2'] = qcow2(3584 << 20)

    lab.call(add_image)
    env = vm_env(lab, tmp_path)
    vms = {
        'ud-clone': {'image': TEMPLATE, 'user_data': FIRST, 'state': 'started'},
        'ud-import': {'image': 'local:import/noble.qcow2', 'storage': 'local-lvm', 'user_data': FIRST},
    }
    runs = four_runs(tmp_path, vm_play(), env, inventory(vms))
    clone, imported = runs.real.one(TASK, 'ud-clone'), runs.real.one(TASK, 'ud-import')

    first_seed = seed_of(lab, 'ud-clone')
    # No user_data_storage: the lab's shared storage with content iso (a seed on local would pin the VM to its node).
    found = re.fullmatch(SHARED_STORAGE + r':iso/puls-seed-ud-clone-([0-9a-f]{12})\.iso', first_seed)
    assert found and clone['diff']['after']['user_data'] == first_seed
    data = lab.volume_bytes(first_seed)
    assert FIRST.encode() in data and ('instance-id: iid-puls-%s' % found.group(1)).encode() in data
    assert b'local-hostname: ud-clone' in data
    assert_pve_ordered_upload(lab, first_seed)  # the upload as the module sent it parses with PVE's multipart rules
    assert seed_of(lab, 'ud-import').startswith(SHARED_STORAGE + ':iso/puls-seed-ud-import-')
    # PVE's own cloud-init drive is gone: a second NoCloud source would compete with the seed.
    for name in ('ud-clone', 'ud-import'):
        config = vm_named(lab, name).config
        assert not [value for value in config.values() if 'cloudinit' in str(value)], config
    assert not any(
        name.endswith('-cloudinit') and vmid in (clone['vmid'], imported['vmid'])
        for name, vmid in lab.call(lambda: [(n, v.get('vmid')) for n, v in lab.pve.storages['local-lvm']['volumes'].items()])
    )
    for run in runs.__dict__.values():
        assert 'user-data-secret' not in run.stdout + run.stderr + repr(run.results)

    # New content: a new seed (new name, new instance-id) replaces the old one, which is deleted; the other VM goes.
    changed = {'ud-clone': {'user_data': SECOND}, 'ud-import': {'state': 'absent'}}
    writes = len(lab.writes())
    check = run_playbook(tmp_path, vm_play(), env, inventory(changed), check=True, name='check')
    assert len(lab.writes()) == writes, 'check mode uploads, writes and deletes nothing'
    real = run_playbook(tmp_path, vm_play(), env, inventory(changed), name='real')
    assert real.rc == 0, real.stdout
    predicted, done = check.one(TASK, 'ud-clone'), real.one(TASK, 'ud-clone')
    assert predicted['diff'] == done['diff'] and predicted['changed'] and done['changes'] == ['user_data']
    second_seed = seed_of(lab, 'ud-clone')
    assert (done['diff']['before']['user_data'], done['diff']['after']['user_data']) == (first_seed, second_seed)
    assert second_seed != first_seed and SECOND.encode() in lab.volume_bytes(second_seed)
    assert done['reboot_required'] == ['ide2'], 'the running guest reads the new seed at its next boot'
    assert check.one(TASK, 'ud-import')['diff'] == real.one(TASK, 'ud-import')['diff']
    assert iso_volumes(lab) == [second_seed], 'the old seed and the destroyed VM\'s seed are deleted'
    assert [config['name'] for config in cluster_vms(lab).values() if config.get('name', '').startswith('ud-')] == ['ud-clone']


@pytest.mark.lab(time_scale=0.01)
def test_the_seed_goes_to_user_data_storage_else_to_a_shared_iso_storage_else_local_and_an_attached_one_stays(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    vms = {'ud-shared': {'image': TEMPLATE, 'user_data': FIRST}, 'ud-local': {'image': TEMPLATE, 'user_data': FIRST, 'user_data_storage': 'local'}}
    first = run_playbook(tmp_path, vm_play(), env, inventory(vms), name='first')
    assert first.rc == 0, first.stdout
    assert seed_of(lab, 'ud-shared').startswith(SHARED_STORAGE + ':iso/puls-seed-ud-shared-')
    local_seed = seed_of(lab, 'ud-local')
    assert local_seed.startswith('local:iso/puls-seed-ud-local-')
    assert_pve_ordered_upload(lab, local_seed)

    # Declared without user_data_storage, a seed already attached with this content stays where it is (no new upload).
    kept = run_playbook(tmp_path, vm_play(), env, inventory({'ud-local': {'image': TEMPLATE, 'user_data': FIRST}}), name='kept')
    assert kept.rc == 0, kept.stdout
    assert kept.one(TASK, 'ud-local')['changed'] is False and seed_of(lab, 'ud-local') == local_seed

    # No shared storage with content iso on the node: local.
    lab.call(lambda: lab.pve.storages[SHARED_STORAGE].update(content='images,import,vztmpl'))
    plain = run_playbook(tmp_path, vm_play(), env, inventory({'ud-plain': {'image': TEMPLATE, 'user_data': FIRST}}), name='plain')
    assert plain.rc == 0, plain.stdout
    assert seed_of(lab, 'ud-plain').startswith('local:iso/puls-seed-ud-plain-')
