# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One plan per VM: the actions that converge it, the diff check mode shows, and what waits for a restart."""

from __future__ import annotations

import base64
from urllib.parse import quote

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, IMPORT, ImageSource
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import MASK, SpecError, VmSpec
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import (
    CONFIGURE,
    DELETE_VOLUME,
    DESTROY,
    REGENERATE_CLOUDINIT,
    RESIZE,
    SHUTDOWN,
    START,
    UPLOAD_SEED,
    Action,
    Creation,
    Observed,
    find_vm,
    plan_vm,
)


def _key(comment: str) -> str:
    blob = b'\x00\x00\x00\x0bssh-ed25519' + (32).to_bytes(4, 'big') + bytes(32)
    return f'ssh-ed25519 {base64.b64encode(blob).decode()} {comment}'


KEY = _key('ops@example')
OTHER_KEY = _key('backup@example')
TEMPLATE_SOURCE = ImageSource(CLONE, vmid=9000, node='pve1', name='debian-12', template=True)
TEMPLATE = {
    'name': 'debian-12',
    'template': 1,
    'digest': 'f00',
    'cores': 1,
    'memory': '1024',
    'scsihw': 'virtio-scsi-single',
    'scsi0': 'local-lvm:base-9000-disk-0,size=2G',
    'ide2': 'local-lvm:vm-9000-cloudinit,media=cdrom',
    'net0': 'virtio=BC:24:11:00:90:00,bridge=vmbr0,firewall=1',
    'boot': 'order=scsi0',
    'serial0': 'socket',
    'tags': 'golden',
}
# The VM as declared, as real PVE returns it (typed values, normalized tags, encoded keys).
CONVERGED = {
    'name': 'web',
    'digest': 'abc',
    'cores': 2,
    'memory': '2048',
    'boot': 'order=scsi0',
    'scsi0': 'local-lvm:vm-100-disk-0,iothread=1,size=32G',
    'ide2': 'local-lvm:vm-100-cloudinit,media=cdrom',
    'net0': 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr1,firewall=1,tag=10',
    'ipconfig0': 'ip=127.0.0.5/24,gw=127.0.0.1',
    'ciuser': 'ops',
    'sshkeys': quote(f'{KEY}\n', safe=''),
    'tags': 'puls-managed;web',
    'onboot': 1,
    'description': '[puls-owner: puls-managed=100]',  # the owner record naming the VM's own VMID
}
OWNED_NOTES = '[puls-owner: puls-managed=100]'
# A clone is made with the source's Notes and the owner record of the new VMID (the template here has no Notes).
OWNER_RECORD = {'notes': '', 'owner_tag': 'puls-managed'}
DECLARED = {
    'name': 'web',
    'cores': 2,
    'memory': 2048,
    'bridge': 'vmbr1',
    'vlan': 10,
    'ip': '127.0.0.5',
    'ci_user': 'ops',
    'ssh_keys': [KEY],
    'tags': ['web'],
    'onboot': True,
    'disk_size': '32G',
}


def spec(**params) -> VmSpec:
    return VmSpec.from_params({**DECLARED, **params})


def observed(status: str = 'running', current: dict | None = None, **config) -> Observed:
    return Observed(vmid=100, node='pve1', status=status, config={**CONVERGED, **config}, current=current)


def kinds(plan) -> list[str]:
    return [action.kind for action in plan.actions]


# Creating.


def test_create_by_clone_applies_declared_config_in_the_same_run():
    plan = plan_vm(spec(state='started', disk_size='40G', vmid=130), creation=Creation(TEMPLATE_SOURCE, 'pve1', TEMPLATE))
    assert kinds(plan) == [CLONE, CONFIGURE, RESIZE, REGENERATE_CLOUDINIT, START]
    assert plan.actions[0].params == {'vmid': 9000, 'node': 'pve1', 'name': 'web', 'newid': 130, 'full': True, **OWNER_RECORD}
    settings = plan.actions[1].params['set']
    assert settings['cores'] == 2 and settings['memory'] == 2048 and settings['ciuser'] == 'ops'
    assert settings['net0'] == 'virtio,bridge=vmbr1,firewall=1,tag=10'  # the template's MAC is not copied: PVE draws one
    assert settings['tags'] == 'puls-managed;web'
    assert plan.actions[2].params == {'disk': 'scsi0', 'size': '40G'}
    assert plan.diff['before'] == {'state': 'absent'}
    assert plan.diff['after']['state'] == 'present' and plan.diff['after']['status'] == 'running'
    assert plan.diff['after']['image'] == 'template debian-12 (9000 on pve1)'
    assert plan.diff['after']['disk_size'] == '40G' and plan.diff['after']['sshkeys'] == [KEY]
    assert plan.changed and plan.reboot_required == ()


def test_new_vm_stays_stopped_under_present():
    plan = plan_vm(spec(), creation=Creation(TEMPLATE_SOURCE, 'pve1', TEMPLATE))
    assert START not in kinds(plan) and 'status' not in plan.diff['after']


def test_template_values_already_as_declared_are_not_rewritten():
    plan = plan_vm(VmSpec.from_params({'name': 'web', 'cores': 1, 'bridge': 'vmbr0'}), creation=Creation(TEMPLATE_SOURCE, 'pve1', TEMPLATE))
    assert plan.actions[1].params['set'] == {'tags': 'golden;puls-managed'}


def test_linked_clone_passes_neither_storage_nor_target():
    plan = plan_vm(spec(linked_clone=True), creation=Creation(TEMPLATE_SOURCE, 'pve1', TEMPLATE))
    assert plan.actions[0].params == {'vmid': 9000, 'node': 'pve1', 'name': 'web', 'full': False, **OWNER_RECORD}


def test_full_clone_to_another_node_passes_target_and_storage():
    plan = plan_vm(spec(storage='ceph', pool='web'), creation=Creation(TEMPLATE_SOURCE, 'pve2', TEMPLATE))
    assert plan.actions[0].params == {
        'vmid': 9000,
        'node': 'pve1',
        'name': 'web',
        'full': True,
        'target': 'pve2',
        'storage': 'ceph',
        'pool': 'web',
        **OWNER_RECORD,
    }


def test_clone_of_a_template_without_cloudinit_drive_gets_one_beside_its_disk():
    template = {key: value for key, value in TEMPLATE.items() if key != 'ide2'}
    plan = plan_vm(spec(), creation=Creation(TEMPLATE_SOURCE, 'pve1', template))
    assert plan.actions[1].params['set']['ide2'] == 'local-lvm:cloudinit'
    assert plan.diff['after']['cloudinit_drive'] == 'ide2: local-lvm:cloudinit'


def test_clone_smaller_than_the_template_disk_is_refused():
    with pytest.raises(SpecError, match=r'^disk_size 1G is below the current size 2G of scsi0'):
        plan_vm(spec(disk_size='1G'), creation=Creation(TEMPLATE_SOURCE, 'pve1', TEMPLATE))


def test_create_by_import_builds_what_a_cloud_image_needs():
    source = ImageSource(IMPORT, volume='local:import/noble.qcow2')
    plan = plan_vm(spec(storage='local-lvm', state='started'), creation=Creation(source, 'pve2'))
    assert kinds(plan) == [IMPORT, RESIZE, REGENERATE_CLOUDINIT, START]
    create = plan.actions[0].params
    assert create['node'] == 'pve2'
    config = create['config']
    assert config['scsi0'] == 'local-lvm:0,import-from=local:import/noble.qcow2'
    assert (config['scsihw'], config['boot'], config['serial0'], config['vga']) == ('virtio-scsi-single', 'order=scsi0', 'socket', 'serial0')
    assert config['ide2'] == 'local-lvm:cloudinit'
    assert config['net0'] == 'virtio,bridge=vmbr1,tag=10'
    assert config['ipconfig0'] == 'ip=127.0.0.5/24,gw=127.0.0.1' and config['cores'] == 2 and config['name'] == 'web'
    assert plan.actions[1].params == {'disk': 'scsi0', 'size': '32G', 'verify_size': True}
    assert plan.diff['after']['image'] == 'import of local:import/noble.qcow2'


SEED = 'local:iso/puls-seed-web-0123456789ab.iso'
NEW_SEED = 'local:iso/puls-seed-web-ba9876543210.iso'
USER_DATA = {'name': 'web', 'user_data': '#cloud-config\n'}


def test_import_with_user_data_gets_the_seed_iso_instead_of_a_pve_cloudinit_drive():
    declared = VmSpec.from_params({**USER_DATA, 'storage': 'local-lvm'})
    plan = plan_vm(declared, creation=Creation(ImageSource(IMPORT, volume='local:import/noble.qcow2'), 'pve1'), seed=SEED)
    assert kinds(plan) == [UPLOAD_SEED, IMPORT] and plan.actions[0].params == {'volid': SEED}
    assert plan.actions[1].params['config']['ide2'] == f'{SEED},media=cdrom'
    assert plan.diff['after']['user_data'] == SEED


def test_clone_with_user_data_puts_the_seed_in_the_cloudinit_drives_slot():
    plan = plan_vm(VmSpec.from_params(USER_DATA), creation=Creation(TEMPLATE_SOURCE, 'pve1', TEMPLATE), seed=SEED)
    assert kinds(plan) == [UPLOAD_SEED, CLONE, CONFIGURE]  # no cloud-init regeneration: PVE's drive is gone
    assert plan.actions[2].params == {'set': {'ide2': f'{SEED},media=cdrom', 'tags': 'golden;puls-managed'}, 'delete': []}
    assert plan.diff['after']['cloudinit_drive'] is None


def test_changed_user_data_uploads_a_new_seed_and_deletes_the_old_one_after_the_switch():
    vm = Observed(100, 'pve1', 'stopped', {'name': 'web', 'tags': 'puls-managed', 'description': OWNED_NOTES, 'ide2': f'{SEED},media=cdrom'})
    plan = plan_vm(VmSpec.from_params(USER_DATA), vm, seed=NEW_SEED)
    assert plan.actions == (
        Action(UPLOAD_SEED, {'volid': NEW_SEED}),
        Action(CONFIGURE, {'set': {'ide2': f'{NEW_SEED},media=cdrom'}, 'delete': []}),
        Action(DELETE_VOLUME, {'volid': SEED}),
    )
    assert plan.changes == ('user_data',) and plan.diff['before']['user_data'] == SEED


def test_unchanged_user_data_is_no_change_and_a_running_vm_reads_a_new_seed_at_boot():
    vm = Observed(100, 'pve1', 'running', {'name': 'web', 'tags': 'puls-managed', 'description': OWNED_NOTES, 'ide2': f'{SEED},media=cdrom'})
    assert not plan_vm(VmSpec.from_params(USER_DATA), vm, seed=SEED).changed
    assert plan_vm(VmSpec.from_params(USER_DATA), vm, seed=NEW_SEED).reboot_required == ('ide2',)


def test_another_vms_seed_is_replaced_but_never_deleted():
    other = 'local:iso/puls-seed-web-old-0123456789ab.iso'
    vm = Observed(100, 'pve1', 'stopped', {'name': 'web', 'tags': 'puls-managed', 'description': OWNED_NOTES, 'ide3': f'{other},media=cdrom'})
    plan = plan_vm(VmSpec.from_params(USER_DATA), vm, seed=SEED)
    assert kinds(plan) == [UPLOAD_SEED, CONFIGURE] and plan.actions[1].params['set'] == {'ide3': f'{SEED},media=cdrom'}


def test_absent_deletes_the_vms_seed_iso_after_the_vm():
    vm = Observed(100, 'pve1', 'stopped', {'name': 'web', 'tags': 'puls-managed', 'description': OWNED_NOTES, 'ide2': f'{SEED},media=cdrom'})
    plan = plan_vm(VmSpec.from_params({'name': 'web', 'state': 'absent'}), vm)
    assert plan.actions[-2:] == (Action(DESTROY, {'purge': 1, 'destroy-unreferenced-disks': 1}), Action(DELETE_VOLUME, {'volid': SEED}))
    assert plan.diff['before']['user_data'] == SEED


def test_import_without_storage_is_refused():
    with pytest.raises(SpecError, match=r'^storage is required to import local:import/noble.qcow2'):
        plan_vm(spec(), creation=Creation(ImageSource(IMPORT, volume='local:import/noble.qcow2'), 'pve1'))


# Drift on an existing VM.


def test_vm_as_declared_gives_an_empty_plan():
    plan = plan_vm(spec(), observed())
    assert plan.actions == () and not plan.changed and plan.changes == () and plan.reboot_required == ()
    assert plan.diff['before'] == plan.diff['after']
    assert set(plan.diff['before']) == {'cores', 'memory', 'net0', 'ipconfig0', 'ciuser', 'sshkeys', 'tags', 'onboot', 'disk_size'}


def test_values_returned_as_strings_count_as_no_drift():
    # fakepve, and PVE for property-string keys, answer with strings.
    plan = plan_vm(spec(), observed(cores='2', onboot='1', memory='current=2048', tags='web,puls-managed'))
    assert not plan.changed


def test_cores_drift_on_running_vm_is_written_and_reboot_required():
    plan = plan_vm(spec(cores=4), observed())
    assert plan.actions == (Action(CONFIGURE, {'set': {'cores': 4}, 'delete': []}),)
    assert plan.changes == ('cores',) and plan.reboot_required == ('cores',)
    assert (plan.diff['before']['cores'], plan.diff['after']['cores']) == (2, 4)


def test_change_pending_from_an_earlier_run_is_not_rewritten_but_still_reboot_required():
    plan = plan_vm(spec(cores=4), observed(cores=4, current={**CONVERGED, 'cores': 2}))
    assert not plan.changed and plan.reboot_required == ('cores',)


def test_cores_drift_on_stopped_vm_needs_no_reboot():
    plan = plan_vm(spec(cores=4), observed(status='stopped'))
    assert kinds(plan) == [CONFIGURE] and plan.reboot_required == ()


def test_reboot_mode_regenerates_cloudinit_then_restarts_gracefully():
    plan = plan_vm(spec(cores=4, ci_user='admin', apply_mode='reboot', shutdown_timeout=90), observed())
    assert kinds(plan) == [CONFIGURE, REGENERATE_CLOUDINIT, SHUTDOWN, START]
    assert plan.actions[2].params == {'timeout': 90}
    assert plan.reboot_required == ()


def test_reboot_mode_applies_a_change_left_pending_by_someone_else():
    plan = plan_vm(spec(apply_mode='reboot'), observed(current={**CONVERGED, 'balloon': 0}))
    assert kinds(plan) == [SHUTDOWN, START]


def test_reboot_mode_leaves_a_vm_alone_for_changes_pve_applies_live():
    plan = plan_vm(spec(apply_mode='reboot', onboot=False, vlan=20), observed())
    assert kinds(plan) == [CONFIGURE] and plan.reboot_required == ()


def test_cloudinit_change_on_running_vm_in_report_mode_waits_for_the_restart():
    plan = plan_vm(spec(ssh_keys=[KEY, OTHER_KEY]), observed())
    assert kinds(plan) == [CONFIGURE]  # not regenerated: PVE keeps it listed as pending cloud-init
    assert plan.reboot_required == ('sshkeys',)
    assert plan.diff['after']['sshkeys'] == [KEY, OTHER_KEY]


def test_cloudinit_not_yet_on_the_drive_keeps_reboot_required():
    vm = Observed(100, 'pve1', 'running', CONVERGED, cloudinit_pending=frozenset({'ipconfig0'}))
    assert plan_vm(spec(), vm).reboot_required == ('ipconfig0',)


def test_cloudinit_change_on_stopped_vm_is_regenerated():
    plan = plan_vm(spec(ip='127.0.0.6'), observed(status='stopped'))
    assert kinds(plan) == [CONFIGURE, REGENERATE_CLOUDINIT]
    assert plan.actions[0].params['set'] == {'ipconfig0': 'ip=127.0.0.6/24,gw=127.0.0.1'}


def test_net0_change_keeps_the_vms_mac():
    plan = plan_vm(spec(bridge='vmbr2'), observed())
    assert plan.actions[0].params['set'] == {'net0': 'virtio=BC:24:11:AA:BB:CC,bridge=vmbr2,firewall=1,tag=10'}


def test_tags_differing_only_in_order_are_no_change_and_in_case_are_one():
    assert not plan_vm(spec(tags=['web', 'db']), observed(tags='db,puls-managed web')).changed
    # The declared tags come spelled as the cluster stores them (_tag_style.as_stored): a capital letter left in them
    # is kept by a case-sensitive tag-style, so it is a change there.
    plan = plan_vm(spec(tags=['Web']), observed(tags='web;puls-managed'))
    assert plan.actions[0].params['set'] == {'tags': 'Web;puls-managed'}


def test_undeclared_tags_keep_their_spelling_when_the_owner_tag_is_added():
    plan = plan_vm(spec(adopt=True, tags=None), observed(tags='Web;db'))
    assert plan.actions[0].params['set'] == {'tags': 'Web;db;puls-managed'}


def test_owner_tag_is_kept_when_the_declared_tags_change():
    plan = plan_vm(spec(tags=['db']), observed())
    assert plan.actions[0].params['set'] == {'tags': 'db;puls-managed'}
    assert (plan.diff['before']['tags'], plan.diff['after']['tags']) == (['puls-managed', 'web'], ['db', 'puls-managed'])


def test_sshkeys_encoded_by_pve_equal_the_declared_keys():
    stored = quote(f'{KEY}\n\n', safe='').replace('%0A', '%0a')  # PVE's own encoding, lower-case escapes, blank lines
    assert not plan_vm(spec(), observed(sshkeys=stored)).changed


def test_empty_declared_list_removes_the_key():
    plan = plan_vm(spec(nameservers=[]), observed(nameserver='127.1.1.1'))
    assert plan.actions[0].params == {'set': {}, 'delete': ['nameserver']}
    assert plan.diff['after']['nameserver'] is None


def test_cipassword_is_set_when_missing_and_masked_on_both_sides():
    plan = plan_vm(spec(ci_password='hunter2'), observed(status='stopped'))
    assert plan.actions[0].params['set'] == {'cipassword': 'hunter2'}
    assert (plan.diff['before']['cipassword'], plan.diff['after']['cipassword']) == (None, MASK)
    assert 'hunter2' not in repr(plan.diff)


def test_cipassword_already_set_is_never_compared_in_clear():
    plan = plan_vm(spec(ci_password='new-secret'), observed(cipassword='**********'))
    assert not plan.changed
    assert plan.diff['before']['cipassword'] == plan.diff['after']['cipassword'] == MASK


def test_adding_cloudinit_options_to_a_vm_without_drive_adds_one():
    plan = plan_vm(spec(storage='ceph'), observed(status='stopped', ide2='none,media=cdrom'))
    assert plan.actions[0].params['set'] == {'ide0': 'ceph:cloudinit'}
    assert REGENERATE_CLOUDINIT in kinds(plan)


# Disk size.


def test_larger_disk_size_grows_the_boot_disk():
    plan = plan_vm(spec(disk_size=40), observed())
    assert plan.actions == (Action(RESIZE, {'disk': 'scsi0', 'size': '40G'}),)
    assert (plan.diff['before']['disk_size'], plan.diff['after']['disk_size']) == ('32G', '40G')
    assert plan.reboot_required == ()


def test_smaller_disk_size_is_an_error_naming_the_current_size():
    with pytest.raises(SpecError) as raised:
        plan_vm(spec(disk_size='16G'), observed())
    assert raised.value.option == 'disk_size' and 'current size 32G' in str(raised.value)


def test_equal_disk_size_in_another_unit_is_no_change():
    assert not plan_vm(spec(disk_size='32768M'), observed()).changed


# Power.


def test_started_starts_a_stopped_vm_which_applies_pending_changes():
    plan = plan_vm(spec(state='started', cores=4), observed(status='stopped'))
    assert kinds(plan) == [CONFIGURE, START] and plan.reboot_required == ()
    assert (plan.diff['before']['status'], plan.diff['after']['status']) == ('stopped', 'running')


def test_stopped_shuts_a_running_vm_down():
    plan = plan_vm(spec(state='stopped'), observed())
    assert kinds(plan) == [SHUTDOWN] and plan.changes == ('status',)


def test_stopped_vm_under_stopped_is_no_change():
    assert not plan_vm(spec(state='stopped'), observed(status='stopped')).changed


def test_restarted_restarts_a_running_vm_once():
    plan = plan_vm(spec(state='restarted', apply_mode='reboot', cores=4), observed())
    assert kinds(plan) == [CONFIGURE, SHUTDOWN, START] and plan.reboot_required == ()


def test_present_leaves_power_alone():
    assert kinds(plan_vm(spec(), observed(status='stopped'))) == []


# Destroying.


def test_absent_shuts_down_then_destroys_with_purge():
    plan = plan_vm(spec(state='absent'), observed())
    assert kinds(plan) == [SHUTDOWN, DESTROY]
    assert plan.actions[1].params == {'purge': 1, 'destroy-unreferenced-disks': 1}
    assert plan.diff == {'before': {'state': 'present', 'vmid': 100, 'node': 'pve1', 'status': 'running'}, 'after': {'state': 'absent'}}


def test_absent_of_a_missing_vm_is_no_change():
    assert not plan_vm(spec(state='absent')).changed


def test_absent_of_a_protected_vm_is_refused():
    with pytest.raises(SpecError) as raised:
        plan_vm(spec(state='absent'), observed(protection=1))
    assert raised.value.option == 'state' and 'protected' in str(raised.value) and 'protection: false' in str(raised.value)


# Ownership and identity.


def test_vm_without_the_owner_tag_is_refused_with_the_adopt_hint():
    with pytest.raises(SpecError) as raised:
        plan_vm(spec(), observed(tags='web'))
    assert raised.value.option == 'name' and 'adopt: true' in str(raised.value)


def test_unowned_vm_is_never_destroyed_without_adopt():
    with pytest.raises(SpecError, match='owner tag'):
        plan_vm(spec(state='absent'), observed(tags='web'))


def test_adopt_adds_the_owner_tag_and_keeps_the_vms_tags():
    plan = plan_vm(VmSpec.from_params({'name': 'web', 'adopt': True}), observed(tags='web;team-a'))
    assert plan.actions[0].params['set'] == {'tags': 'puls-managed;team-a;web'}
    assert plan.reboot_required == ()


def test_template_with_the_vms_name_is_refused():
    with pytest.raises(SpecError, match=r"^name 'web' is a template .*pve_template"):
        plan_vm(spec(), observed(template=1))


RESOURCES = [
    {'type': 'qemu', 'vmid': 100, 'name': 'web', 'node': 'pve1'},
    {'type': 'qemu', 'vmid': 101, 'name': 'db', 'node': 'pve2'},
    {'type': 'lxc', 'vmid': 102, 'name': 'web', 'node': 'pve1'},
    {'type': 'qemu', 'vmid': 103, 'name': '', 'node': 'pve2'},
]


def test_vm_is_found_by_its_unique_name():
    assert find_vm(RESOURCES, 'web')['vmid'] == 100
    assert find_vm(RESOURCES, 'mail') is None


def test_two_vms_with_the_declared_name_are_refused_listing_vmids():
    with pytest.raises(SpecError) as raised:
        find_vm(RESOURCES + [{'type': 'qemu', 'vmid': 107, 'name': 'web', 'node': 'pve3'}], 'web')
    assert raised.value.option == 'name' and '100 on pve1, 107 on pve3' in str(raised.value)


def test_declared_vmid_identifies_the_vm_even_before_pve_reports_its_name():
    assert find_vm(RESOURCES, 'mail', vmid=103)['vmid'] == 103
    assert find_vm(RESOURCES, 'mail', vmid=150) is None


def test_declared_vmid_of_another_vm_is_refused():
    with pytest.raises(SpecError, match=r"^vmid 101 is VM 'db' on pve2, not 'web'"):
        find_vm(RESOURCES, 'web', vmid=101)
    with pytest.raises(SpecError, match=r'^vmid 102 is taken by a lxc'):
        find_vm(RESOURCES, 'web', vmid=102)


# One plan for check mode and the real run.


def test_same_inputs_give_the_same_plan_so_check_and_real_run_report_the_same():
    first = plan_vm(spec(cores=4, tags=['db']), observed())
    second = plan_vm(spec(cores=4, tags=['db']), observed())
    assert first == second and first.diff == second.diff


def test_missing_vm_without_creation_is_a_programming_error():
    with pytest.raises(ValueError, match='needs a creation'):
        plan_vm(spec())


# Ownership a clone cannot inherit (_ownership).

HAND_CLONE_NOTES = 'cloned by hand from debian-12\n\n[puls-owner: puls-managed=9000]'
NAMES = {9000: "template 'debian-12' (9000 on pve1)"}


def test_clone_made_by_hand_of_an_owned_template_is_refused_and_named_as_such():
    vm = Observed(100, 'pve1', 'running', {**CONVERGED, 'description': HAND_CLONE_NOTES}, names=NAMES)
    with pytest.raises(SpecError) as raised:
        plan_vm(spec(), vm)
    message = str(raised.value)
    assert raised.value.option == 'name' and "looks like a clone of template 'debian-12' (9000 on pve1)" in message
    assert 'naming VMID 9000, not its own' in message and 'adopt: true' in message


def test_clone_made_by_hand_is_never_destroyed_without_adopt():
    with pytest.raises(SpecError, match='looks like a clone of guest 9000'):
        plan_vm(spec(state='absent'), observed(description=HAND_CLONE_NOTES))


def test_adopting_a_hand_clone_rewrites_its_record_to_its_own_vmid_and_keeps_its_notes():
    plan = plan_vm(spec(adopt=True), observed(description=HAND_CLONE_NOTES))
    assert plan.actions[0].params['set'] == {'description': 'cloned by hand from debian-12\n\n[puls-owner: puls-managed=100]'}
    assert (plan.diff['before']['owner_record'], plan.diff['after']['owner_record']) == ('puls-managed=9000', 'puls-managed=100')


def test_vm_tagged_by_an_earlier_release_is_managed_and_gets_its_record_as_a_change():
    plan = plan_vm(spec(), observed(description='Notes of a human\n\n[puls-provision: base.yml=aaaaaaaaaaaa]'))
    assert kinds(plan) == [CONFIGURE] and plan.changes == ('owner_record',)
    assert plan.actions[0].params['set'] == {'description': 'Notes of a human\n\n[puls-provision: base.yml=aaaaaaaaaaaa]\n\n[puls-owner: puls-managed=100]'}
    assert plan.reboot_required == ()  # Notes apply at once


def test_vm_tagged_by_an_earlier_release_declared_absent_is_destroyed():
    plan = plan_vm(spec(state='absent'), observed(status='stopped', description=None))
    assert kinds(plan) == [DESTROY]


def test_a_clone_is_made_with_the_source_notes_and_the_owner_tag_for_the_record_of_its_new_vmid():
    clone = plan_vm(spec(), creation=Creation(TEMPLATE_SOURCE, 'pve1', {**TEMPLATE, 'description': 'golden\n\n[puls-owner: puls-managed=9000]'}))
    assert clone.actions[0].params['notes'] == 'golden\n\n[puls-owner: puls-managed=9000]'
    assert clone.actions[0].params['owner_tag'] == 'puls-managed'


def test_a_hibernated_vm_is_only_resumed_and_a_change_to_it_is_refused_before_any_write():
    # qemu-server Qemu.pm vm_suspend with todisk leaves it stopped and locked `suspended`; update_vm refuses a write
    # (check_lock) until a start resumes it.
    hibernated = observed('stopped', lock='suspended')
    assert kinds(plan_vm(spec(state='started'), hibernated)) == [START]
    with pytest.raises(SpecError, match=r"^state VM 'web' \(100 on pve1\) is hibernated \(lock suspended\): PVE changes none"):
        plan_vm(spec(state='started', cores=4), hibernated)
