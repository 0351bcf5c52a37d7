# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_template's pure core: the spec hash, why a template is not current, what conversion and retirement write,
which guests are linked clones, and which input is refused."""

from __future__ import annotations

import json

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils import _template_io, _template_plan
from ansible_collections.puls.proxmox.plugins.module_utils._progress import ProgressNotes
from ansible_collections.puls.proxmox.plugins.module_utils._template_plan import (
    TemplateRequest,
    build_settings,
    decide,
    find_build_vm,
    find_template,
    is_retired_version,
    retire_name,
    retired_tags,
    spec_entries,
    template_notes,
    template_tags,
    uses_base,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError

SPEC = {'image': 'ubuntu-24.04', 'cores': 2, 'memory': 2048}
IDENTITY = '9017:ubuntu-24.04-cloud'
HASHES = {'playbooks/base.yml': '3f2a9c1b7d4e', 'playbooks/web.yml': '0c1d2e3f4a5b'}
CONFIG = {'cores': 2, 'memory': '2048', 'scsi0': 'local-lvm:base-300-disk-0,size=3584M'}
RESOURCES = [
    {'type': 'qemu', 'vmid': 9017, 'name': 'ubuntu-24.04-cloud', 'node': 'pve1', 'template': 1},
    {'type': 'qemu', 'vmid': 300, 'name': 'web-golden', 'node': 'pve1', 'template': 1, 'tags': 'puls-managed'},
    {'type': 'qemu', 'vmid': 301, 'name': 'web-golden-1a2b3c4d', 'node': 'pve2', 'template': 1, 'tags': 'puls-managed;puls-retired'},
    {'type': 'qemu', 'vmid': 120, 'name': 'web-golden', 'node': 'pve1', 'template': 0},
    {'type': 'lxc', 'vmid': 130, 'name': 'web-golden', 'node': 'pve1', 'template': 0},
]


def notes_for(spec=None, hashes=None, human='Golden image for the web tier'):
    hashes = HASHES if hashes is None else hashes
    return template_notes(human, spec_entries(spec or SPEC, IDENTITY, hashes), hashes)


def reasons(spec=None, hashes=None, recorded_spec=None, identity=IDENTITY):
    """Why a template built from recorded_spec and HASHES is not current against spec and hashes (default: the same)."""
    spec, hashes = spec or SPEC, hashes or HASHES
    return decide(notes_for(recorded_spec), CONFIG, spec_entries(spec, identity, hashes), spec, hashes, 'template ubuntu-24.04-cloud (9017 on pve1)')


# ---------------------------------------------------------------------------------------------- the spec hash


def test_the_spec_hash_is_stable_and_independent_of_key_order():
    assert spec_entries(SPEC, IDENTITY, HASHES) == spec_entries(dict(reversed(list(SPEC.items()))), IDENTITY, dict(HASHES))
    entries = spec_entries(SPEC, IDENTITY, HASHES)
    assert list(entries) == ['spec', 'cores', 'image', 'memory']
    assert all(len(value) == 12 and int(value, 16) >= 0 for value in entries.values())


def test_the_resolved_image_is_hashed_not_the_text_that_names_it():
    by_name = spec_entries(dict(SPEC, image='ubuntu-24.04-cloud'), IDENTITY, HASHES)
    by_vmid = spec_entries(dict(SPEC, image='9017'), IDENTITY, HASHES)
    rebuilt_base = spec_entries(SPEC, '9018:ubuntu-24.04-cloud', HASHES)
    assert by_name == by_vmid
    assert rebuilt_base['image'] != by_name['image'] and rebuilt_base['spec'] != by_name['spec']


def test_a_password_never_enters_the_hash():
    assert spec_entries(dict(SPEC, ci_password='s3cret'), IDENTITY, HASHES) == spec_entries(SPEC, IDENTITY, HASHES)


def test_provision_hashes_change_the_spec_hash_but_no_per_key_entry():
    changed = spec_entries(SPEC, IDENTITY, dict(HASHES, **{'playbooks/web.yml': 'ffffffffffff'}))
    same = spec_entries(SPEC, IDENTITY, HASHES)
    assert changed['spec'] != same['spec'] and {k: v for k, v in changed.items() if k != 'spec'} == {k: v for k, v in same.items() if k != 'spec'}


def test_a_string_spec_is_hashed_whole():
    assert list(spec_entries('golden-v3', None, {})) == ['spec']
    assert spec_entries('golden-v3', None, {}) != spec_entries('golden-v4', None, {})


# ---------------------------------------------------------------------------------------------- current or not


def test_a_template_built_from_the_same_spec_and_files_is_current():
    assert reasons() == []


def test_a_hardware_change_names_the_old_value_from_the_config_and_the_new_one():
    assert reasons(spec=dict(SPEC, cores=4)) == ['cores 2 -> 4']
    assert reasons(spec=dict(SPEC, memory=4096)) == ['memory 2048 -> 4096']


def test_a_grown_disk_names_the_template_disk_size():
    assert reasons(spec=dict(SPEC, disk_size='8G'), recorded_spec=dict(SPEC, disk_size='4G')) == ['disk_size 3584M -> 8G']


def test_a_new_base_image_is_named():
    assert reasons(identity='9018:ubuntu-24.04-cloud') == ['base image changed (now template ubuntu-24.04-cloud (9017 on pve1))']


def test_provision_files_changed_new_and_dropped_are_each_named():
    declared = {'playbooks/web.yml': 'ffffffffffff', 'playbooks/extra.yml': 'aaaaaaaaaaaa'}
    assert reasons(hashes=declared) == [
        'provision file playbooks/web.yml changed',
        'provision file playbooks/extra.yml is new',
        'provision file playbooks/base.yml is no longer declared',
    ]


def test_a_puls_basename_entry_counts_for_its_declared_path():
    description = 'x\n\n[puls-provision: web.yml=0c1d2e3f4a5b]\n' + _template_plan._notes.format_block(
        spec_entries(SPEC, IDENTITY, {'web.yml': '0c1d2e3f4a5b'}), tag=_template_plan.TEMPLATE_TAG
    )
    declared = {'playbooks/web.yml': '111111111111'}
    assert decide(description, CONFIG, spec_entries(SPEC, IDENTITY, declared), SPEC, declared) == ['provision file playbooks/web.yml changed']


def test_spec_keys_added_and_removed_are_named():
    assert reasons(spec=dict(SPEC, cpu='host')) == ['cpu is newly declared']
    assert reasons(spec={'image': 'ubuntu-24.04', 'cores': 2}) == ['memory is no longer declared']


def test_a_template_without_a_spec_block_is_not_current():
    assert decide('[puls-provision: playbooks/web.yml=0c1d2e3f4a5b]', CONFIG, spec_entries(SPEC, IDENTITY, HASHES), SPEC, HASHES) == [
        'it records no spec (it was not made by pve_template)'
    ]


def test_a_changed_string_spec_says_the_spec_changed():
    description = template_notes('', spec_entries('v1', None, {}), {})
    assert decide(description, CONFIG, spec_entries('v2', None, {}), 'v2', {}) == ['the spec changed']


# ---------------------------------------------------------------------------------------------- what is written


def test_conversion_deletes_every_build_time_cloud_init_setting_and_nothing_else():
    config = {
        'ciuser': 'alice',
        'cipassword': '**********',
        'sshkeys': 'ssh-ed25519%20AAAA',
        'ipconfig0': 'ip=dhcp',
        'ipconfig1': 'ip=127.0.0.2/24',
        'nameserver': '127.0.0.1',
        'searchdomain': 'lab.test',
        'cicustom': 'user=local:snippets/u.yml',
        'citype': 'nocloud',
        'cores': 2,
        'ide2': 'local-lvm:vm-120-cloudinit,media=cdrom',
        'description': 'x',
    }
    assert build_settings(config) == ['cicustom', 'cipassword', 'ciuser', 'ipconfig0', 'ipconfig1', 'nameserver', 'searchdomain', 'sshkeys']


def test_a_container_template_keeps_its_dns_settings_and_no_cloud_init_key_is_deleted():
    config = {'nameserver': '127.0.0.53', 'searchdomain': 'lab.test', 'hostname': 'web-golden-build', 'net0': 'name=eth0,bridge=vmbr0,ip=dhcp'}
    assert build_settings(config, 'lxc') == []
    assert build_settings(config) == ['nameserver', 'searchdomain']


def test_a_build_containers_static_addresses_become_automatic_without_gateways_and_other_devices_stay():
    config = {
        'net0': 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=127.0.0.41/24,gw=127.0.0.1,type=veth',
        'net1': 'name=eth1,bridge=vmbr1,ip=dhcp,ip6=fe80::41/64,gw6=fe80::1',
        'net2': 'name=eth2,bridge=vmbr0,ip=manual',
        'net3': 'name=eth3,bridge=vmbr0',
    }
    assert _template_plan.build_addresses(config, 'lxc') == {
        'net0': 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=dhcp,type=veth',
        'net1': 'name=eth1,bridge=vmbr1,ip=dhcp,ip6=auto',
    }
    assert _template_plan.build_addresses({'net0': 'virtio=BC:24:11:00:00:01,bridge=vmbr0', 'ipconfig0': 'ip=127.0.0.2/24'}) == {}


def test_a_thick_lvm_storage_is_refused_for_a_container_template_naming_where_it_is_declared_or_used():
    types = {'local-lvm': 'lvmthin', 'big': 'lvm', 'local': 'dir'}
    spec = {'storage': 'local-lvm', 'mount_points': [{'slot': 0, 'path': '/srv', 'size': '1G'}, {'slot': 1, 'path': '/data', 'size': '1G', 'storage': 'big'}]}
    places = _template_plan.declared_storages(spec)
    assert places == [('storage', 'local-lvm'), ('mount_points[1].storage', 'big')]
    refusal = _template_plan.template_storage_refusal(places, types, 'ct-golden')
    assert refusal.startswith("mount_points[1].storage is on 'big', a thick LVM storage (type lvm)") and "'ct-golden'" in refusal
    config = {'rootfs': 'big:vm-105-disk-0,size=8G', 'mp0': 'local:105/vm-105-disk-1.raw,mp=/srv', 'mp1': '/host/dir,mp=/bind'}
    assert _template_plan.volume_storages(config) == [('mp0', 'local'), ('rootfs', 'big')]
    assert _template_plan.template_storage_refusal([('rootfs', 'local-lvm'), ('mp0', 'unlisted')], types, 'ct-golden') is None


def test_conversion_notes_keep_human_text_and_hold_both_blocks():
    notes = notes_for()
    lines = notes.splitlines()
    assert lines[0] == 'Golden image for the web tier'
    assert lines[-3] == '[puls-provision: playbooks/base.yml=3f2a9c1b7d4e,playbooks/web.yml=0c1d2e3f4a5b]'
    assert lines[-1].startswith('[puls-template: spec=') and _template_plan.recorded_entries(notes) == spec_entries(SPEC, IDENTITY, HASHES)


def test_conversion_notes_without_provision_files_drop_a_stale_provision_block():
    notes = template_notes('[puls-provision: playbooks/old.yml=0123456789ab]', spec_entries('v1', None, {}), {})
    assert notes.startswith('[puls-template: spec=') and 'puls-provision' not in notes


def test_conversion_tags_drop_the_building_mark_and_add_the_owner_tag():
    assert template_tags('puls-building;web', 'puls-managed') == 'puls-managed;web'
    # As PVE spells them (a case-sensitive tag-style keeps Team-A); the marks are told in any case.
    assert template_tags('Puls-Building;Team-A;Puls-Managed', 'puls-managed') == 'Team-A;puls-managed'
    assert retired_tags('Team-A;puls-managed') == 'Team-A;puls-managed;puls-retired'


def test_a_retire_name_is_the_name_with_a_hash_distinct_per_template():
    notes = notes_for()
    name = retire_name('web-golden', 300, notes)
    assert name == retire_name('web-golden', 300, notes)
    assert name != retire_name('web-golden', 301, notes)
    assert is_retired_version(name, 'puls-managed;puls-retired', 'web-golden')
    assert not is_retired_version(name, 'puls-managed', 'web-golden')
    assert not is_retired_version('web-golden-v2', 'puls-retired', 'web-golden')


# ---------------------------------------------------------------------------------------------- linked clones


@pytest.mark.parametrize(
    'config, expected',
    [
        ({'scsi0': 'local-lvm:base-300-disk-0/vm-130-disk-0,size=3584M'}, True),  # LVM-thin, ZFS, RBD
        ({'virtio0': 'local:300/base-300-disk-1.qcow2/130/vm-130-disk-0.qcow2,size=8G'}, True),  # directory storages
        ({'unused0': 'local-lvm:base-300-disk-0/vm-130-disk-1'}, True),  # a detached disk still holds the base
        ({'scsi0': 'local-lvm:base-3001-disk-0/vm-130-disk-0'}, False),  # another template's base
        ({'scsi0': 'local-lvm:vm-130-disk-0,size=3584M'}, False),  # a full clone
        ({'scsi0': 'local-lvm:base-300-disk-0,size=3584M'}, False),  # the template itself
    ],
)
def test_a_linked_clone_is_known_by_its_volume_naming_the_base(config, expected):
    assert uses_base(config, 300) is expected


# ---------------------------------------------------------------------------------------------- finding and refusing


def test_a_template_is_found_by_name_among_templates_only():
    assert find_template(RESOURCES, 'web-golden')['vmid'] == 300
    assert find_template(RESOURCES, 'missing') is None


def test_two_templates_with_the_name_are_an_error_naming_the_option():
    twin = dict(RESOURCES[1], vmid=302, node='pve2')
    with pytest.raises(SpecError) as raised:
        find_template(RESOURCES + [twin], 'web-golden')
    assert raised.value.option == 'name' and '300 on pve1' in str(raised.value) and '302 on pve2' in str(raised.value)


@pytest.mark.parametrize(
    'vmid, words',
    [
        (120, "VM 'web-golden' (120 on pve1), not a template"),
        (130, "container 'web-golden' (130 on pve1), not a template"),
        (9017, "template 'ubuntu-24.04-cloud' (9017 on pve1), not 'web-golden'"),
    ],
)
def test_a_vmid_of_another_guest_is_refused_naming_vmid(vmid, words):
    with pytest.raises(SpecError) as raised:
        find_template(RESOURCES, 'web-golden', vmid)
    assert raised.value.option == 'vmid' and words in str(raised.value)


def test_a_vmid_may_name_a_retired_generation_of_the_template():
    assert find_template(RESOURCES, 'web-golden', 301)['name'] == 'web-golden-1a2b3c4d'


def test_a_build_in_progress_is_a_vm_named_name_build_and_tagged_building():
    building = {'type': 'qemu', 'vmid': 140, 'name': 'web-golden-build', 'node': 'pve2', 'template': 0, 'tags': 'puls-building;puls-managed'}
    kept = dict(building, vmid=141, tags='puls-managed')
    assert _template_plan.find_building(RESOURCES + [kept, building], 'web-golden')['vmid'] == 140
    assert _template_plan.find_building(RESOURCES + [kept], 'web-golden') is None


def test_a_converted_build_still_counts_as_in_progress_until_it_takes_the_name():
    converted = {'type': 'qemu', 'vmid': 140, 'name': 'web-golden-build', 'node': 'pve1', 'template': 1, 'tags': 'puls-building;puls-managed'}
    assert _template_plan.find_building(RESOURCES + [converted], 'web-golden')['vmid'] == 140
    renamed = dict(converted, name='web-golden', tags='puls-managed')
    assert _template_plan.find_building(RESOURCES + [renamed], 'web-golden') is None


SEED = 'local:iso/puls-seed-web-golden-build-0a1b2c3d.iso'


def test_a_seed_iso_of_the_build_is_detached_for_an_empty_cloud_init_drive_and_deleted():
    seed = _template_plan.seed_drive({'scsi0': 'local-lvm:vm-140-disk-0,size=4G', 'ide2': SEED + ',media=cdrom'}, 'web-golden-build')
    assert seed == _template_plan.SeedDrive('ide2', SEED, 'local-lvm:cloudinit', True)
    before, after = {}, {}
    seed.diff(before, after)
    assert (before, after) == ({'user_data': SEED, 'cloudinit_drive': None}, {'user_data': None, 'cloudinit_drive': 'ide2: local-lvm:cloudinit'})


def test_a_seed_iso_of_another_vm_is_only_detached_and_a_vm_without_one_has_none():
    other = 'local:iso/puls-seed-web1-0a1b2c3d.iso'
    config = {'scsi0': 'local-lvm:vm-140-disk-0', 'ide0': 'local-lvm:vm-140-cloudinit,media=cdrom', 'ide2': other + ',media=cdrom'}
    # Not the build's own file, and a cloud-init drive is there already: the drive goes, nothing takes its slot.
    assert _template_plan.seed_drive(config, 'web-golden-build') == _template_plan.SeedDrive('ide2', other, None, False)
    assert _template_plan.seed_drive({'scsi0': 'local-lvm:vm-140-disk-0', 'ide2': 'local:iso/ubuntu.iso,media=cdrom'}, 'x') is None


def test_the_build_vm_must_exist_and_be_a_qemu_vm():
    assert find_build_vm(RESOURCES, 120)['name'] == 'web-golden'
    for vmid, words in ((555, 'does not exist'), (130, 'give the VMID of a QEMU VM')):
        with pytest.raises(SpecError, match=words) as raised:
            find_build_vm(RESOURCES, vmid)
        assert raised.value.option == 'vmid'


def test_a_container_template_is_found_among_containers_only_and_named_by_its_hostname():
    cts = RESOURCES + [
        {'type': 'lxc', 'vmid': 400, 'name': 'web-golden', 'node': 'pve2', 'template': 1, 'tags': 'puls-managed'},
        {'type': 'lxc', 'vmid': 401, 'name': 'web-golden-build', 'node': 'pve2', 'template': 0, 'tags': 'puls-building'},
    ]
    assert find_template(cts, 'web-golden', guest_type='lxc')['vmid'] == 400
    assert find_template(cts, 'web-golden')['vmid'] == 300  # a VM template's lookup never sees the container template
    assert _template_plan.find_building(cts, 'web-golden', 'lxc')['vmid'] == 401 and _template_plan.find_building(cts, 'web-golden') is None
    assert find_build_vm(cts, 130, 'lxc')['type'] == 'lxc'
    with pytest.raises(SpecError, match='give the VMID of a container'):
        find_build_vm(cts, 120, 'lxc')
    with pytest.raises(SpecError, match='not a template'):
        find_template(cts, 'web-golden', 300, 'lxc')
    assert (_template_plan.name_key('lxc'), _template_plan.name_key('qemu')) == ('hostname', 'name')


def test_a_linked_clone_of_a_container_template_uses_its_base_in_the_root_file_system_or_a_mount_point():
    assert _template_plan.uses_base({'rootfs': 'local:400/base-400-disk-0.raw/402/vm-402-disk-0.raw,size=8G'}, 400)
    assert _template_plan.uses_base({'rootfs': 'local-lvm:vm-402-disk-0,size=8G', 'mp0': 'local:400/base-400-disk-1.raw/402/vm-402-disk-1.raw,mp=/srv'}, 400)
    assert not _template_plan.uses_base({'rootfs': 'local-lvm:vm-402-disk-0,size=8G'}, 400)
    # ZFS names a container's base volume basevol- (ZFSPoolPlugin.pm create_base) and its linked clones after it.
    assert _template_plan.uses_base({'rootfs': 'tank:basevol-400-disk-0/subvol-402-disk-0,size=8G'}, 400)
    assert not _template_plan.uses_base({'rootfs': 'tank:basevol-4001-disk-0/subvol-402-disk-0,size=8G'}, 400)
    assert [e['vmid'] for e in _template_plan.linked_clone_candidates(RESOURCES, 9017, 'lxc')] == [130]


def test_a_container_templates_image_is_an_os_template_volume_or_a_container_template():
    class Client:
        def get(self, path, **params):
            return [{'node': 'pve1', 'status': 'online'}] if path == '/nodes' else {'description': ''}

    volume = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst'
    identity, described = _template_io.image_identity(Client(), {'image': volume}, RESOURCES, guest_type='lxc')
    assert identity == f'{volume}@unrecorded' and described == volume
    cts = RESOURCES + [{'type': 'lxc', 'vmid': 400, 'name': 'base-ct', 'node': 'pve2', 'template': 1}]
    assert _template_io.image_identity(Client(), {'image': 'base-ct'}, cts, guest_type='lxc') == ('400:base-ct', 'base-ct (400)')
    with pytest.raises(SpecError, match='names no container template') as raised:
        _template_io.image_identity(Client(), {'image': 'ubuntu-24.04-cloud'}, cts, guest_type='lxc')
    assert raised.value.option == 'spec'


@pytest.mark.parametrize(
    'params, option',
    [
        ({'name': 'web', 'spec': 'x', 'guest_type': 'openvz'}, 'guest_type'),
        ({'name': 'web golden', 'spec': 'x'}, 'name'),
        ({'name': 'web', 'state': 'converted', 'spec': 'x'}, 'vmid'),
        ({'name': 'web', 'state': 'converted', 'vmid': 120}, 'spec'),
        ({'name': 'web', 'spec': {'spec': 1}}, 'spec'),
        ({'name': 'web', 'spec': {'a,b': 1}}, 'spec'),
        ({'name': 'web', 'spec': ['image']}, 'spec'),
        ({'name': 'web', 'spec': 'x', 'provision_hashes': {'web.yml': 'NOT-HEX'}}, 'provision_hashes'),
        ({'name': 'web', 'spec': 'x', 'provision_hashes': {'a,b.yml': 'abc'}}, 'provision_hashes'),
        ({'name': 'web', 'state': 'retired', 'vmid': 5}, 'vmid'),
        ({'name': 'web', 'state': 'absent', 'owner_tag': 'Not A Tag'}, 'owner_tag'),
        ({'name': 'web', 'spec': 'x', 'shutdown_timeout': -1}, 'shutdown_timeout'),
    ],
)
def test_bad_input_is_refused_naming_the_option(params, option):
    with pytest.raises(SpecError) as raised:
        TemplateRequest.from_params(params)
    assert raised.value.option == option and str(raised.value).startswith(option)


def test_a_request_keeps_what_was_given_and_owns_by_the_default_tag():
    request = TemplateRequest.from_params({'name': 'web', 'state': 'retired', 'vmid': '4711', 'shutdown_timeout': 30})
    assert (request.vmid, request.owner_tag, request.shutdown_timeout, request.provision_hashes) == (4711, 'puls-managed', 30, None)


class BuildingCluster:
    """/cluster/resources with another run's build VM of web-golden for the first `looks` reads, then without it."""

    def __init__(self, looks, notes_path):
        self.looks, self.reads = looks, 0
        self.progress = ProgressNotes(notes_path)

    def cluster_vms(self):
        self.reads += 1
        building = {'type': 'qemu', 'vmid': 140, 'name': 'web-golden-build', 'node': 'pve2', 'template': 0, 'tags': 'puls-building;puls-managed'}
        return RESOURCES + ([building] if self.reads <= self.looks else [])


def test_a_query_waits_while_another_build_runs_noting_the_build_vm_and_says_how_long(tmp_path):
    clock = {'now': 1000.0}

    def sleep(seconds):
        clock['now'] += seconds

    cluster = BuildingCluster(2, str(tmp_path / 'notes.jsonl'))
    request = _template_plan.TemplateRequest(name='web-golden', wait=60, wait_delay=10)
    answer = _template_io.reconcile(cluster, request, now=lambda: clock['now'], sleep=sleep)
    assert answer['building'] is None and answer['waited'] == 20 and cluster.reads == 3
    notes = [json.loads(line) for line in (tmp_path / 'notes.jsonl').read_text().splitlines()]
    what = 'waiting for another build of template web-golden to end: build VM web-golden-build (140 on pve2)'
    assert [(n['what'], n['started']) for n in notes] == [(what, 1000.0)] * 2

    cluster = BuildingCluster(10, str(tmp_path / 'again.jsonl'))
    answer = _template_io.reconcile(cluster, _template_plan.TemplateRequest(name='web-golden', wait=15, wait_delay=10), now=lambda: clock['now'], sleep=sleep)
    assert answer['building'] == {'vmid': 140, 'node': 'pve2', 'name': 'web-golden-build'} and answer['waited'] == 15
