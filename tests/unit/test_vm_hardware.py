# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""disks, nets and remove_undeclared_disks: checked (errors name the entry's field), planned (only declared
properties written and shown, grow only, undeclared disks left alone unless asked), and what waits for a restart."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._guest_options import role_options
from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, ImageSource
from ansible_collections.puls.proxmox.plugins.module_utils._option_specs import VM_ARGUMENT_SPEC
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError, VmSpec, allocates_volume, held_until_restart
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import BLANK, CONFIGURE, IMPORT, RESIZE, Creation, Observed, plan_vm

OWNED = {
    'name': 'app',
    'tags': 'puls-managed',
    'description': '[puls-owner: puls-managed=100]',
    'boot': 'order=scsi0',
    'scsi0': 'local-lvm:vm-100-disk-0,size=8G',
    'scsi1': 'local-lvm:vm-100-disk-1,cache=none,size=16G',
    'scsi2': 'local-lvm:vm-100-disk-2,size=4G',
    'ide2': 'local:iso/installer.iso,media=cdrom',
    'net0': 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
    'net1': 'e1000=BC:24:11:00:00:02,bridge=vmbr1,tag=20',
}


def spec(**params) -> VmSpec:
    return VmSpec.from_params({'name': 'app', **params})


def plan(status='stopped', **params):
    return plan_vm(spec(**params), Observed(100, 'pve1', status, OWNED))


def test_disks_and_nets_are_lists_of_dicts_with_role_variables():
    assert VM_ARGUMENT_SPEC['disks'] == {'type': 'list', 'elements': 'dict'}
    assert VM_ARGUMENT_SPEC['nets'] == {'type': 'list', 'elements': 'dict'}
    assert VM_ARGUMENT_SPEC['remove_undeclared_disks'] == {'type': 'bool', 'default': False}
    options = role_options('machine', {'pve_disks': [{'slot': 'scsi1', 'size': 16}], 'pve_nets': [{'slot': 'net1'}], 'pve_remove_undeclared_disks': True})
    assert options['disks'] == [{'slot': 'scsi1', 'size': 16}] and options['nets'] == [{'slot': 'net1'}] and options['remove_undeclared_disks']


@pytest.mark.parametrize(
    'disks, option, message',
    [
        ([{'slot': 'nvme1', 'size': 8}], 'disks[0].slot', "is 'nvme1', which is not a disk slot PVE has"),
        ([{'slot': 'scsi31', 'size': 8}], 'disks[0].slot', 'scsi0-scsi30'),
        ([{'size': 8}], 'disks[0].slot', 'is required'),
        ([{'slot': 'scsi1'}], 'disks[0].size', 'is required'),
        ([{'slot': 'scsi1', 'size': '+8G'}], 'disks[0].size', 'not an increment'),
        ([{'slot': 'scsi1', 'size': 8, 'cache': 'fast'}], 'disks[0].cache', 'must be one of none, writethrough'),
        ([{'slot': 'virtio1', 'size': 8, 'ssd': True}], 'disks[0].ssd', 'is not a property of a virtio disk'),
        ([{'slot': 'sata1', 'size': 8, 'iothread': True}], 'disks[0].iothread', 'is not a property of a sata disk'),
        ([{'slot': 'scsi1', 'size': 8, 'discard': 'maybe'}], 'disks[0].discard', 'must be true or false'),
        ([{'slot': 'scsi1', 'size': 8, 'sise': 8}], 'disks[0]', 'has unknown key(s) sise'),
        ([{'slot': 'scsi1', 'size': 8}, {'slot': 'SCSI1', 'size': 9}], 'disks', 'declares scsi1 more than once'),
        ('scsi1', 'disks', 'must be a list of dicts'),
    ],
)
def test_a_bad_disk_is_refused_naming_its_field(disks, option, message):
    with pytest.raises(SpecError) as caught:
        spec(disks=disks)
    assert caught.value.option == option and message in str(caught.value)


@pytest.mark.parametrize(
    'nets, option, message',
    [
        ([{'slot': 'eth1'}], 'nets[0].slot', 'use net0 to net31'),
        ([{'slot': 'net1', 'vlan': 5000}], 'nets[0].vlan', 'from 1 to 4094'),
        ([{'slot': 'net1', 'model': 'tulip'}], 'nets[0].model', 'must be one of e1000'),
        ([{'slot': 'net1', 'model': 'e1000', 'mtu': 9000}], 'nets[0].mtu', 'VirtIO devices only'),
        ([{'slot': 'net1', 'bridge': 'vmbr 1'}], 'nets[0].bridge', 'must be a bridge name'),
    ],
)
def test_a_bad_nic_is_refused_naming_its_field(nets, option, message):
    with pytest.raises(SpecError) as caught:
        spec(nets=nets)
    assert caught.value.option == option and message in str(caught.value)


def test_net0_is_declared_in_one_place():
    with pytest.raises(SpecError, match=r'^nets declares net0, which bridge and vlan declare too'):
        spec(bridge='vmbr1', nets=[{'slot': 'net0', 'bridge': 'vmbr2'}])
    assert spec(nets=[{'slot': 'net0', 'bridge': 'vmbr2'}]).nets[0].slot == 'net0'


def test_a_converged_vm_plans_nothing():
    converged = plan(
        disks=[{'slot': 'scsi1', 'size': '16G', 'cache': 'none'}, {'slot': 'scsi2', 'size': 4}],
        nets=[{'slot': 'net1', 'bridge': 'vmbr1', 'vlan': 20, 'model': 'e1000'}],
    )
    assert converged.actions == ()
    assert converged.diff['before']['scsi1'] == {'storage': 'local-lvm', 'size': '16G', 'cache': 'none'}
    assert converged.diff['before']['net1'] == {'bridge': 'vmbr1', 'tag': '20', 'model': 'e1000'}


def test_a_new_disk_is_allocated_on_its_storage_with_its_properties():
    new = plan(storage='local-lvm', disks=[{'slot': 'virtio3', 'size': '512M', 'discard': True, 'iothread': True, 'storage': 'fast'}])
    assert new.actions[0].params['set'] == {'virtio3': 'fast:0.5,discard=on,iothread=1'}
    assert new.diff['before']['virtio3'] is None
    assert new.diff['after']['virtio3'] == {'storage': 'fast', 'size': '512M', 'discard': 'on', 'iothread': '1'}


def test_a_new_disk_without_storage_goes_beside_the_boot_disk():
    assert plan(disks=[{'slot': 'scsi3', 'size': 2}]).actions[0].params['set'] == {'scsi3': 'local-lvm:2'}


def test_changed_disk_properties_are_written_over_the_others_and_a_larger_size_grows_it():
    changed = plan(disks=[{'slot': 'scsi1', 'size': '20G', 'cache': 'writeback', 'ssd': True}])
    assert [action.kind for action in changed.actions] == [CONFIGURE, RESIZE]
    assert changed.actions[0].params['set'] == {'scsi1': 'local-lvm:vm-100-disk-1,cache=writeback,size=16G,ssd=1'}
    assert changed.actions[1].params == {'disk': 'scsi1', 'size': '20G'}
    assert changed.diff['before']['scsi1'] == {'storage': 'local-lvm', 'size': '16G', 'cache': 'none', 'ssd': None}
    assert changed.diff['after']['scsi1'] == {'storage': 'local-lvm', 'size': '20G', 'cache': 'writeback', 'ssd': '1'}


def test_a_smaller_disk_is_an_error_naming_the_disk():
    with pytest.raises(SpecError) as caught:
        plan(disks=[{'slot': 'scsi1', 'size': '8G'}])
    assert caught.value.option == 'disks[0].size'
    assert 'below the current size 16G of scsi1' in str(caught.value)


@pytest.mark.parametrize('slot, message', [('scsi0', 'the boot disk'), ('ide2', 'holds a CD-ROM drive')])
def test_a_disk_on_the_boot_disk_or_a_cdrom_slot_is_refused(slot, message):
    with pytest.raises(SpecError, match=message) as caught:
        plan(disks=[{'slot': slot, 'size': 64}])
    assert caught.value.option == 'disks[0].slot'


def test_undeclared_disks_are_left_alone_unless_asked_then_detached():
    assert not plan(disks=[{'slot': 'scsi1', 'size': 16}]).changed
    detach = plan(disks=[{'slot': 'scsi1', 'size': 16}], remove_undeclared_disks=True)
    # The boot disk and the CD-ROM drive stay; scsi2 goes (PVE keeps its volume as unusedN).
    assert detach.actions[0].params == {'set': {}, 'delete': ['scsi2']}
    assert detach.diff['before']['scsi2'] == 'local-lvm:vm-100-disk-2' and detach.diff['after']['scsi2'] is None


def test_a_nic_keeps_its_mac_and_undeclared_properties():
    changed = plan(nets=[{'slot': 'net1', 'bridge': 'vmbr2', 'vlan': 30, 'firewall': True}])
    assert changed.actions[0].params['set'] == {'net1': 'e1000=BC:24:11:00:00:02,bridge=vmbr2,tag=30,firewall=1'}
    assert changed.diff['before']['net1'] == {'bridge': 'vmbr1', 'tag': '20', 'firewall': None}
    assert changed.diff['after']['net1'] == {'bridge': 'vmbr2', 'tag': '30', 'firewall': '1'}


def test_a_new_nic_is_virtio_on_the_default_bridge_unless_declared():
    assert plan(nets=[{'slot': 'net2', 'vlan': 5}]).actions[0].params['set'] == {'net2': 'virtio,bridge=vmbr0,tag=5'}


def test_a_new_disk_allocates_so_its_write_is_not_repeated():
    assert allocates_volume('local-lvm:32,cache=none') and allocates_volume('local-lvm:0.5')
    assert not allocates_volume('local-lvm:vm-100-disk-1,size=32G')


@pytest.mark.parametrize(
    'key, hotplug, value, held',
    [
        ('scsi3', None, 'local-lvm:4', False),  # a new SCSI disk is hot-plugged with PVE's default hotplug
        ('sata3', None, 'local-lvm:4', True),  # never IDE or SATA
        ('scsi3', 'network', 'local-lvm:4', True),  # nor without hotplug disk
        ('scsi2', None, None, False),  # detached at once
        ('scsi1', None, 'local-lvm:vm-100-disk-1,cache=writeback,size=16G', True),  # cache waits for the next boot
        ('scsi1', None, 'local-lvm:vm-100-disk-1,backup=0,cache=none,size=16G', False),  # backup is no QEMU setting
    ],
)
def test_what_a_running_vm_takes_of_a_disk_change_follows_pve(key, hotplug, value, held):
    config = dict(OWNED, **({'hotplug': hotplug} if hotplug else {}))
    assert held_until_restart(key, config, value) is held


def test_a_running_vm_reports_a_changed_cache_as_awaiting_a_restart():
    changed = plan(status='running', disks=[{'slot': 'scsi1', 'size': 16, 'cache': 'writeback'}])
    assert changed.reboot_required == ('scsi1',)


# Firmware and console: bios, efidisk, tpm, serial, vga.

UEFI = dict(
    OWNED,
    bios='ovmf',
    efidisk0='local-lvm:vm-100-disk-3,efitype=4m,pre-enrolled-keys=1,size=528K',
    tpmstate0='local-lvm:vm-100-disk-4,size=4M,version=v2.0',
)


def test_uefi_with_efi_disk_and_tpm_is_added_beside_the_boot_disk():
    uefi = plan(bios='ovmf', efidisk={'pre_enrolled_keys': True}, tpm={'storage': 'tpm-store'}, serial='socket', vga='serial0')
    assert uefi.actions[0].params['set'] == {
        'bios': 'ovmf',
        'serial0': 'socket',
        'vga': 'serial0',
        'efidisk0': 'local-lvm:1,efitype=4m,pre-enrolled-keys=1',
        'tpmstate0': 'tpm-store:1,version=v2.0',
    }
    assert uefi.diff['before']['efidisk0'] is None
    assert uefi.diff['after']['efidisk0'] == {'storage': 'local-lvm', 'efitype': '4m', 'pre-enrolled-keys': '1'}
    assert uefi.diff['after']['tpmstate0'] == {'storage': 'tpm-store', 'version': 'v2.0'}


def test_an_existing_efi_disk_and_tpm_state_are_kept():
    kept = plan_vm(spec(bios='ovmf', efidisk={'pre_enrolled_keys': False}, tpm={}), Observed(100, 'pve1', 'stopped', UEFI))
    assert kept.actions == ()
    assert kept.diff['before']['efidisk0'] == kept.diff['after']['efidisk0']


def test_a_tpm_state_of_another_version_is_an_error_since_pve_cannot_change_it():
    with pytest.raises(SpecError, match=r'^tpm.version is v1.2, but the TPM state of the VM .* is v2.0') as caught:
        plan_vm(spec(tpm={'version': 'v1.2'}), Observed(100, 'pve1', 'stopped', UEFI))
    assert caught.value.option == 'tpm.version'


@pytest.mark.parametrize(
    'params, option, message',
    [
        ({'bios': 'uefi'}, 'bios', 'must be one of seabios, ovmf'),
        ({'bios': 'seabios', 'efidisk': {}}, 'efidisk', 'declare bios: ovmf'),
        ({'efidisk': {'size': 4}}, 'efidisk', 'unknown key(s) size'),
        ({'tpm': {'version': '3'}}, 'tpm.version', 'must be one of v2.0, v1.2'),
        ({'serial': 'tcp:1234'}, 'serial', 'must be socket'),
        ({'vga': 'vga9000'}, 'vga', 'must be a display type'),
    ],
)
def test_bad_firmware_or_console_is_refused_naming_the_field(params, option, message):
    with pytest.raises(SpecError) as caught:
        spec(**params)
    assert caught.value.option == option and message in str(caught.value)


def test_vga_keeps_undeclared_properties_and_an_empty_serial_removes_the_port():
    config = dict(OWNED, vga='std,memory=32', serial0='socket')
    changed = plan_vm(spec(vga='qxl', serial=''), Observed(100, 'pve1', 'stopped', config))
    assert changed.actions[0].params == {'set': {'vga': 'qxl,memory=32'}, 'delete': ['serial0']}


def test_firmware_and_console_changes_wait_for_the_next_boot():
    changed = plan(status='running', bios='ovmf', efidisk={}, vga='std')
    assert changed.reboot_required == ('bios', 'efidisk0', 'vga')


def test_a_clone_writes_its_further_nic_without_the_template_mac_since_pve_draws_new_ones():
    template = {'name': 'tpl', 'template': 1, 'scsi0': 'local-lvm:base-9000-disk-0,size=2G', 'net1': 'e1000=BC:24:11:00:90:01,bridge=vmbr1'}
    source = ImageSource(CLONE, vmid=9000, node='pve1', name='tpl')
    clone = plan_vm(spec(nets=[{'slot': 'net1', 'vlan': 7}]), creation=Creation(source, 'pve1', template))
    assert clone.actions[1].params['set']['net1'] == 'e1000,bridge=vmbr1,tag=7'


# An installer ISO in the CD-ROM drive, and the boot order.


def test_an_iso_goes_into_the_cdrom_drive_and_the_boot_order_names_it_first():
    swapped = plan(cdrom='local:iso/debian-12.iso', boot=['ide2', 'scsi0'])
    assert swapped.actions[0].params['set'] == {'boot': 'order=ide2;scsi0', 'ide2': 'local:iso/debian-12.iso,media=cdrom'}
    assert (swapped.diff['before']['cdrom'], swapped.diff['after']['cdrom']) == ('local:iso/installer.iso', 'local:iso/debian-12.iso')
    assert not plan(cdrom='local:iso/installer.iso', boot='scsi0').changed


def test_an_empty_cdrom_ejects_the_iso_and_a_vm_without_a_drive_gets_one_beside_the_cloud_init_drive():
    assert plan(cdrom='').actions[0].params['set'] == {'ide2': 'none,media=cdrom'}
    config = {key: value for key, value in OWNED.items() if key != 'ide2'} | {'ide2': 'local-lvm:vm-100-cloudinit,media=cdrom'}
    added = plan_vm(spec(cdrom='local:iso/debian-12.iso'), Observed(100, 'pve1', 'stopped', config))
    assert added.actions[0].params['set'] == {'ide0': 'local:iso/debian-12.iso,media=cdrom'}
    assert added.diff['before']['cdrom'] is None


def test_a_running_vm_takes_a_new_medium_at_once():
    assert plan(status='running', cdrom='local:iso/debian-12.iso').reboot_required == ()


@pytest.mark.parametrize(
    'params, option, message',
    [
        ({'cdrom': 'debian-12.iso'}, 'cdrom', 'must be an ISO volume such as local:iso/debian-12.iso'),
        ({'boot': ['scsi0', 'floppy']}, 'boot', "lists 'floppy', which is not a disk"),
        ({'boot': []}, 'boot', 'must list the devices'),
    ],
)
def test_a_bad_cdrom_or_boot_order_is_refused_naming_it(params, option, message):
    with pytest.raises(SpecError) as caught:
        spec(**params)
    assert caught.value.option == option and message in str(caught.value)


def test_a_boot_order_naming_a_device_the_vm_lacks_is_refused_as_pve_refuses_it():
    with pytest.raises(SpecError, match=r'^boot lists virtio5, which the VM does not have'):
        plan(boot=['scsi0', 'virtio5'])
    assert plan(boot=['virtio5', 'scsi0'], disks=[{'slot': 'virtio5', 'size': 1}]).changed


# A VM from scratch: no image.


def test_a_vm_without_image_is_created_empty_with_its_disks_network_and_installer_iso():
    declared = spec(
        storage='local-lvm',
        disk_size='40G',
        cores=4,
        nets=[{'slot': 'net0', 'bridge': 'vmbr0', 'model': 'e1000'}],
        disks=[{'slot': 'scsi1', 'size': 100}],
        cdrom='local:iso/debian-12.iso',
    )
    new = plan_vm(declared, creation=Creation(ImageSource(BLANK), 'pve1'))
    [create] = new.actions
    assert create.kind == IMPORT  # the create request of a VM with its whole config
    assert create.params['config'] == {
        'name': 'app',
        'scsihw': 'virtio-scsi-single',
        'scsi0': 'local-lvm:40',
        'net0': 'e1000,bridge=vmbr0',
        'cores': 4,
        'tags': 'puls-managed',
        'ide2': 'local:iso/debian-12.iso,media=cdrom',
        'scsi1': 'local-lvm:100',
    }
    assert new.diff['after']['image'] is None and new.diff['after']['disk_size'] == '40G'
    assert new.diff['after']['cdrom'] == 'local:iso/debian-12.iso'


@pytest.mark.parametrize('missing', ['storage', 'disk_size'])
def test_a_vm_without_image_needs_a_storage_and_a_size_for_its_boot_disk(missing):
    declared = spec(**{key: value for key, value in {'storage': 'local-lvm', 'disk_size': '40G'}.items() if key != missing})
    with pytest.raises(SpecError, match=rf"^{missing} is required to create 'app' without an image"):
        plan_vm(declared, creation=Creation(ImageSource(BLANK), 'pve1'))
