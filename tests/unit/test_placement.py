# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a new VM goes: the declared node, the source's node when PVE allows no other, else the freest online node."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._placement import choose_node, clone_volumes, locality_volumes, uses_local_storage
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError

GIB = 1 << 30
NODES = [
    {'node': 'pve1', 'status': 'online', 'maxmem': 64 * GIB, 'mem': 60 * GIB},
    {'node': 'pve2', 'status': 'online', 'maxmem': 64 * GIB, 'mem': 10 * GIB},
    {'node': 'pve3', 'status': 'online', 'maxmem': 128 * GIB, 'mem': 70 * GIB},
    {'node': 'pve4', 'status': 'offline', 'maxmem': 256 * GIB, 'mem': 0},
]


def test_online_node_with_most_free_memory_is_chosen():
    assert choose_node(NODES) == 'pve3'


def test_choice_is_limited_to_the_candidates():
    assert choose_node(NODES, nodes=['pve1', 'pve2']) == 'pve2'


def test_offline_candidates_are_skipped():
    assert choose_node(NODES, nodes=['pve1', 'pve4']) == 'pve1'


def test_equal_free_memory_goes_to_the_first_name():
    even = [{'node': name, 'status': 'online', 'maxmem': GIB, 'mem': 0} for name in ('pve9', 'pve5')]
    assert choose_node(even) == 'pve5'


def test_declared_node_wins():
    assert choose_node(NODES, node='pve1', nodes=['pve2'], source_node='pve3') == 'pve1'


def test_linked_clone_of_a_template_on_local_storage_goes_to_its_templates_node():
    assert choose_node(NODES, source_node='pve1', source_is_local=True) == 'pve1'


def test_clone_of_a_template_on_shared_storage_is_placed_by_free_memory():
    # A linked clone too: clone_vm refuses a target only for local drives or a non-shared storage.
    assert choose_node(NODES, source_node='pve1') == 'pve3'


def test_source_on_local_storage_pins_the_vm_to_its_node():
    assert choose_node(NODES, source_node='pve1', source_is_local=True) == 'pve1'


def test_full_clone_from_shared_storage_may_go_anywhere():
    assert choose_node(NODES, source_node='pve1') == 'pve3'


def test_declared_node_that_cannot_reach_local_disks_is_refused():
    with pytest.raises(SpecError) as raised:
        choose_node(NODES, node='pve2', source_node='pve1', source_is_local=True)
    assert raised.value.option == 'node'
    assert 'local storage of pve1' in str(raised.value) and 'set node: pve1' in str(raised.value)


def test_candidates_without_the_required_source_node_are_refused():
    with pytest.raises(SpecError, match=r'^nodes lists pve2, pve3, but the VM must be created on pve1 \(the source is on local storage of pve1'):
        choose_node(NODES, nodes=['pve2', 'pve3'], source_node='pve1', source_is_local=True)


def test_offline_declared_node_is_refused():
    with pytest.raises(SpecError, match=r'^node is pve4, which is not online'):
        choose_node(NODES, node='pve4')


def test_no_online_candidate_is_refused():
    with pytest.raises(SpecError, match=r'^nodes offers no online node .*pve4'):
        choose_node(NODES, nodes=['pve4'])


@pytest.mark.parametrize('params, option', [({'node': 'pve9'}, 'node'), ({'nodes': ['pve1', 'pve9']}, 'nodes')])
def test_unknown_node_names_are_refused(params, option):
    with pytest.raises(SpecError, match=f'^{option} names pve9, not a node of this cluster'):
        choose_node(NODES, **params)


def test_any_volume_off_the_shared_storages_is_local():
    assert not uses_local_storage(['ceph:vm-9000-disk-0', 'cephfs:iso/x.iso'], ['ceph', 'cephfs'])
    assert uses_local_storage(['ceph:vm-9000-disk-0', 'local-lvm:vm-9000-cloudinit'], ['ceph'])
    assert uses_local_storage(['/dev/disk/by-id/ata-X'], ['ceph'])


def test_full_clone_to_a_non_shared_storage_stays_on_the_templates_node():
    assert choose_node(NODES, source_node='pve1', storage='local-lvm', storage_is_local=True) == 'pve1'


def test_declared_node_away_from_the_template_with_a_non_shared_storage_is_refused():
    with pytest.raises(SpecError) as raised:
        choose_node(NODES, node='pve2', source_node='pve1', storage='local-lvm', storage_is_local=True)
    assert raised.value.option == 'node'
    assert 'storage local-lvm is not shared' in str(raised.value) and 'set node: pve1 or declare a shared storage' in str(raised.value)


def test_candidates_away_from_the_template_with_a_non_shared_storage_are_refused():
    with pytest.raises(SpecError, match=r'^nodes lists pve2, pve3, but the VM must be created on pve1 \(storage local-lvm is not shared'):
        choose_node(NODES, nodes=['pve2', 'pve3'], source_node='pve1', storage='local-lvm', storage_is_local=True)


def test_full_clone_to_a_shared_storage_goes_to_the_freest_node_that_has_it():
    assert choose_node(NODES, source_node='pve1', storage='nfs', storage_nodes=['pve1', 'pve2']) == 'pve2'
    assert choose_node(NODES, source_node='pve1', storage='nfs') == 'pve3'


def test_declared_node_without_the_shared_storage_is_refused():
    with pytest.raises(SpecError, match=r'^node is pve3, but storage nfs is not enabled there \(only on pve1, pve2\)'):
        choose_node(NODES, node='pve3', source_node='pve1', storage='nfs', storage_nodes=['pve1', 'pve2'])


def test_a_shared_storage_on_none_of_the_candidates_is_refused():
    with pytest.raises(SpecError, match=r'^storage is nfs, which is enabled on none of the nodes the VM may go to \(pve2, pve3\)'):
        choose_node(NODES, nodes=['pve2', 'pve3'], source_node='pve1', storage='nfs', storage_nodes=['pve4'])


TEMPLATE = {
    'scsi0': 'nfs:9000/base-9000-disk-0.raw,size=4G',
    'ide2': 'nfs:vm-9000-cloudinit,media=cdrom',
    'ide0': 'local:iso/virtio-win.iso,media=cdrom',
    'ide1': 'none,media=cdrom',
    'sata0': 'cdrom,media=cdrom',
}


def test_an_iso_in_a_cdrom_drive_counts_for_locality_but_empty_and_physical_drives_do_not():
    assert sorted(locality_volumes(TEMPLATE)) == ['local:iso/virtio-win.iso', 'nfs:9000/base-9000-disk-0.raw', 'nfs:vm-9000-cloudinit']
    assert uses_local_storage(locality_volumes(TEMPLATE), ['nfs'])
    assert not uses_local_storage(locality_volumes(dict(TEMPLATE, ide0='nfs:iso/virtio-win.iso,media=cdrom')), ['nfs'])


def test_a_full_clone_copies_disks_and_the_cloud_init_drive_not_isos():
    assert sorted(clone_volumes(TEMPLATE)) == ['nfs:9000/base-9000-disk-0.raw', 'nfs:vm-9000-cloudinit']
