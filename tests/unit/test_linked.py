# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Guests that may be linked clones of a template on LVM-thin, whose volume IDs do not name the base
(pve-storage LvmThinPlugin.pm clone_image): judged by the template block a clone inherits with the Notes."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils import _linked

BLOCK = '[puls-template: spec=9e107d9d372b]'
TEMPLATE = {'template': 1, 'scsi0': 'local-lvm:base-200-disk-0,size=4G', 'description': 'Golden\n\n' + BLOCK, 'meta': 'ctime=1'}
TYPES = {'local-lvm': 'lvmthin', 'tank': 'zfspool'}


def guest(description='Golden\n\n' + BLOCK, disk='local-lvm:vm-210-disk-0,size=4G', meta='ctime=1'):
    return {'scsi0': disk, 'description': description, 'meta': meta}


def test_a_guest_with_the_templates_block_and_a_thin_disk_on_its_storage_may_be_linked():
    assert _linked.may_be_linked(TEMPLATE, 200, guest(), TYPES)


def test_a_sibling_without_the_block_is_not_counted_though_it_shares_meta():
    # clone_vm copies meta: every clone of one original shares it, so meta tells nothing.
    assert not _linked.may_be_linked(TEMPLATE, 200, guest(description='web server'), TYPES)


def test_a_guest_with_another_templates_block_is_not_counted():
    assert not _linked.may_be_linked(TEMPLATE, 200, guest(description='[puls-template: spec=0123456789ab]'), TYPES)


def test_a_template_without_a_block_has_no_clone_that_can_be_told_and_none_is_counted():
    made_by_hand = dict(TEMPLATE, description='made by hand')
    assert not _linked.may_be_linked(made_by_hand, 200, guest(description='made by hand'), TYPES)


def test_storages_that_name_the_base_and_other_storages_are_not_judged_by_inheritance():
    assert not _linked.may_be_linked(TEMPLATE, 200, guest(disk='tank:vm-210-disk-0,size=4G'), TYPES)
    zfs_template = dict(TEMPLATE, scsi0='tank:base-200-disk-0,size=4G')
    assert not _linked.may_be_linked(zfs_template, 200, guest(disk='tank:vm-210-disk-0,size=4G'), TYPES)


def test_a_storage_whose_type_is_not_visible_is_judged_as_if_it_hid_the_base():
    assert _linked.may_be_linked(TEMPLATE, 200, guest(), {})


def test_storage_types_are_needed_only_when_a_guest_has_a_plain_disk_beside_the_base_and_the_block():
    assert _linked.needs_storage_types(TEMPLATE, 200, [guest(description='web'), guest()])
    assert not _linked.needs_storage_types(TEMPLATE, 200, [guest(description='web'), guest(disk='local:210/vm-210-disk-0.qcow2')])


def test_templates_are_never_counted():
    assert not _linked.may_be_linked(TEMPLATE, 200, dict(guest(), template=1), TYPES)


def test_a_container_templates_base_volumes_are_found_on_zfs_by_their_basevol_name():
    # ZFSPoolPlugin.pm create_base renames a container's subvol-N-disk-M basevol-N-disk-M.
    container_template = {'template': 1, 'rootfs': 'tank:basevol-200-disk-0,size=8G', 'mp0': 'local-lvm:base-200-disk-1,mp=/srv,size=1G'}
    assert _linked.base_storages(container_template, 200) == {'tank', 'local-lvm'}
    assert _linked.base_storages(container_template, 20) == set()
