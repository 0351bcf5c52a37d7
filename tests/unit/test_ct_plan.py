# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One plan per container: the actions that converge it, the diff check mode shows, and what waits for a restart."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._actions import Action
from ansible_collections.puls.proxmox.plugins.module_utils._ct_config import CtSpec, MountPoint
from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import (
    CLONE,
    CONFIGURE,
    CREATE,
    DESTROY,
    RESIZE,
    SHUTDOWN,
    START,
    Creation,
    Observed,
    Source,
    find_container,
    plan_container,
    resolve_source,
    volumes_to_measure,
)
from ansible_collections.puls.proxmox.plugins.module_utils._ct_privileges import container_needs
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import MASK, SpecError

VZTMPL = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst'
OWNED = {
    'hostname': 'web',
    'cores': 1,
    'memory': 512,
    'swap': 512,
    'rootfs': 'local-lvm:vm-120-disk-0,size=4G',
    'mp0': 'local-lvm:vm-120-disk-1,mp=/data,size=2G',
    'net0': 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=127.0.0.5/24,gw=127.0.0.1,type=veth',
    'features': 'nesting=1',
    'unprivileged': 1,
    'tags': 'puls-managed',
    'description': '[puls-owner: puls-managed=120]',
}


def spec(**options):
    return CtSpec.from_params({'name': 'web', **options})


def running(config=None, current=None):
    config = OWNED if config is None else config
    return Observed(120, 'pve1', 'running', dict(config), dict(current if current is not None else config))


def test_a_create_from_an_os_template_sends_every_declared_setting_and_the_secrets_apart_from_the_diff():
    plan = plan_container(
        spec(
            image=VZTMPL,
            storage='local-lvm',
            disk_size='8G',
            cores=2,
            ip='127.0.0.9',
            vlan=20,
            firewall=True,
            mount_points=[{'slot': 0, 'path': '/data', 'size': '512M'}],
            features=['nesting'],
            password='s3cret!',
            state='started',
        ),
        creation=Creation(Source(volume=VZTMPL), 'pve1'),
    )
    create, start = plan.actions
    assert start == Action(START)
    assert create.kind == CREATE and create.params['secrets'] == {'password': 's3cret!'}
    assert create.params['config'] == {
        'ostemplate': VZTMPL,
        'hostname': 'web',
        'cores': 2,
        'net0': 'name=eth0,bridge=vmbr0,tag=20,firewall=1,ip=127.0.0.9/24,gw=127.0.0.1',
        'features': 'nesting=1',
        'tags': 'puls-managed',
        'rootfs': 'local-lvm:8',
        'mp0': 'local-lvm:0.5,mp=/data',
    }
    assert plan.diff['after']['password'] == MASK and 's3cret!' not in repr(plan.diff)
    assert plan.diff['after']['mp0'] == {'path': '/data', 'size': '512M'} and plan.diff['after']['status'] == 'running'


def test_a_create_without_disk_size_still_names_a_root_file_system_of_pves_default_size():
    create = plan_container(spec(image=VZTMPL, storage='local-lvm'), creation=Creation(Source(volume=VZTMPL), 'pve1')).actions[0]
    assert create.params['config']['rootfs'] == 'local-lvm:4'


def test_an_os_template_create_needs_storage_and_refuses_what_only_a_create_can_take_for_a_clone():
    with pytest.raises(SpecError, match='^storage is required'):
        plan_container(spec(image=VZTMPL), creation=Creation(Source(volume=VZTMPL), 'pve1'))
    with pytest.raises(SpecError, match='^password is written into the root file system'):
        spec(image='debian-base', password='s3cret!')
    with pytest.raises(SpecError, match='^image .* is not a container template volume'):
        spec(image='local:iso/debian.iso')


def test_a_running_container_takes_cores_memory_and_net0_at_once_and_features_at_its_next_start():
    plan = plan_container(spec(cores=2, memory=1024, ip='127.0.0.6/24', features=[]), running())
    [configure] = plan.actions
    assert configure.params['set'] == {
        'cores': 2,
        'memory': 1024,
        'net0': 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=127.0.0.6/24,gw=127.0.0.1,type=veth',
    }
    assert configure.params['delete'] == ['features']
    assert plan.reboot_required == ('features',)
    assert plan.changes == ('cores', 'features', 'memory', 'net0')


def test_apply_mode_reboot_restarts_a_container_with_pending_changes_and_reports_nothing_waiting():
    pending = dict(OWNED, nameserver='127.0.0.2')
    plan = plan_container(spec(apply_mode='reboot'), running(pending, OWNED))
    assert [action.kind for action in plan.actions] == [SHUTDOWN, START] and plan.reboot_required == ()
    assert plan_container(spec(), running(pending, OWNED)).reboot_required == ('nameserver',)


def test_the_declared_state_of_an_unchanged_container_plans_nothing():
    declared = spec(cores=1, ip='127.0.0.5/24', features=['nesting'], disk_size='4G', mount_points=[{'slot': 0, 'path': '/data', 'size': '2G'}])
    plan = plan_container(declared, running())
    assert plan.actions == () and not plan.changed


def test_volumes_grow_to_their_declared_size_and_a_smaller_one_is_refused_naming_its_option():
    plan = plan_container(
        spec(disk_size='6G', mount_points=[{'slot': 0, 'path': '/srv', 'size': '3G'}, {'slot': 1, 'path': '/new', 'size': '1G', 'storage': 'local-lvm'}]),
        running(),
    )
    assert [action for action in plan.actions if action.kind == RESIZE] == [
        Action(RESIZE, {'disk': 'rootfs', 'size': '6G'}),
        Action(RESIZE, {'disk': 'mp0', 'size': '3G'}),
    ]
    [configure] = [action for action in plan.actions if action.kind == CONFIGURE]
    assert configure.params['set'] == {'mp0': 'local-lvm:vm-120-disk-1,mp=/srv,size=2G', 'mp1': 'local-lvm:1,mp=/new'}
    assert plan.reboot_required == ('mp0',), 'an existing mount point moves at the next start, a new one is mounted at once'
    with pytest.raises(SpecError, match='^disk_size 2G is below the current size 4G of rootfs'):
        plan_container(spec(disk_size='2G'), running())
    with pytest.raises(SpecError, match='^mount_points 1G is below the current size 2G of mp0'):
        plan_container(spec(mount_points=[{'slot': 0, 'path': '/data', 'size': '1G'}]), running())


def test_a_new_mount_point_without_a_storage_is_refused():
    with pytest.raises(SpecError, match='^mount_points mp3 is new and names no storage'):
        plan_container(spec(mount_points=[{'slot': 3, 'path': '/x', 'size': '1G'}]), running())


def test_unprivileged_cannot_change_on_an_existing_container():
    with pytest.raises(SpecError, match='^unprivileged is False, but .* is unprivileged, which PVE cannot change'):
        plan_container(spec(unprivileged=False), running())


def test_a_container_without_the_owner_tag_is_refused_unless_adopted_and_then_gets_the_tag_and_record():
    foreign = {key: value for key, value in OWNED.items() if key not in ('tags', 'description')}
    with pytest.raises(SpecError, match='^name .* lacks the owner tag'):
        plan_container(spec(), running(foreign))
    [configure] = plan_container(spec(adopt=True), running(foreign)).actions
    assert configure.params['set'] == {'tags': 'puls-managed', 'description': '[puls-owner: puls-managed=120]'}


def test_absent_shuts_a_running_container_down_then_purges_it_and_refuses_a_protected_one():
    plan = plan_container(spec(state='absent'), running())
    assert [action.kind for action in plan.actions] == [SHUTDOWN, DESTROY]
    assert plan.actions[1].params == {'purge': 1, 'destroy-unreferenced-disks': 1}
    with pytest.raises(SpecError, match='^state absent refused'):
        plan_container(spec(state='absent'), running(dict(OWNED, protection=1)))
    assert plan_container(spec(state='absent')).actions == ()


def test_a_clone_is_named_by_the_request_and_configured_over_the_templates_config_in_one_write():
    template = dict(OWNED, template=1, hostname='base', rootfs='local-lvm:base-900-disk-0,size=4G')
    template.pop('mp0')
    plan = plan_container(spec(image='base', cores=4, disk_size='8G'), creation=Creation(Source(900, 'pve1', 'base'), 'pve1', template))
    clone, configure, resize = plan.actions
    assert clone.kind == CLONE and clone.params['name'] == 'web' and clone.params['full'] is True and 'target' not in clone.params
    assert configure.params == {'set': {'cores': 4}, 'delete': []}
    assert resize == Action(RESIZE, {'disk': 'rootfs', 'size': '8G'})


def test_find_and_resolve_tell_containers_from_vms():
    resources = [
        {'vmid': 100, 'type': 'qemu', 'name': 'web', 'node': 'pve1'},
        {'vmid': 120, 'type': 'lxc', 'name': 'web', 'node': 'pve1'},
        {'vmid': 900, 'type': 'lxc', 'name': 'base', 'node': 'pve2', 'template': 1},
    ]
    assert find_container(resources, 'web')['vmid'] == 120
    with pytest.raises(SpecError, match='^vmid 100 is taken by a qemu VM'):
        find_container(resources, 'web', 100)
    assert resolve_source(spec(image='base'), resources) == Source(900, 'pve2', 'base')
    with pytest.raises(SpecError, match="^image 'web' names no container template"):
        resolve_source(spec(image='web'), resources)


def test_bad_values_name_their_option():
    for options, message in (
        ({'ip': '127.0.0.300'}, '^ip must be an IPv4 address'),
        ({'features': ['mknod']}, '^features lists mknod'),
        ({'mount_points': [{'slot': 0, 'path': 'data', 'size': '1G'}]}, '^mount_points entry 1: path must be an absolute path'),
        ({'mount_points': [{'slot': 0, 'path': '/a', 'size': '1G'}, {'slot': 0, 'path': '/b', 'size': '1G'}]}, '^mount_points declares slot 0 twice'),
        ({'gateway': '127.0.0.1', 'ip': 'dhcp'}, '^gateway is set but ip is dhcp'),
        ({'password': 'abc', 'image': VZTMPL}, '^password must be at least 5 characters'),
    ):
        with pytest.raises(SpecError, match=message):
            spec(**options)
    assert spec(mount_points=[{'slot': 2, 'path': '/a', 'size': '1'}]).mount_points == (MountPoint(2, '/a', 1024**3),)


def test_the_privileges_of_a_create_follow_pve_containers_checks():
    create = plan_container(
        spec(image=VZTMPL, storage='local-lvm', cores=2, ip='dhcp', unprivileged=False), creation=Creation(Source(volume=VZTMPL), 'pve1')
    ).actions[0]
    needs = {(grant.privilege, grant.path) for item in container_needs([create], None) for grant in item.grants}
    assert {
        ('VM.Allocate', '/vms/<new VMID>'),
        ('Datastore.AllocateSpace', '/storage/local'),
        ('Datastore.AllocateSpace', '/storage/local-lvm'),
        ('Sys.Modify', '/'),
        ('VM.Config.CPU', '/vms/<new VMID>'),
        ('VM.Config.Network', '/vms/<new VMID>'),
        ('VM.Config.Disk', '/vms/<new VMID>'),
        ('SDN.Use', '/sdn/zones/*/vmbr0'),
    } <= needs


@pytest.mark.parametrize(('declared', 'sent'), [('1500M', '1.46484375'), ('100M', '0.09765625'), ('1M', '0.0009765625'), ('8G', '8'), ('1T', '1024')])
def test_a_new_volume_is_sent_as_its_exact_size_in_gib(declared, sent):
    """pve-container src/PVE/LXC.pm create_disks allocates int(GiB * 1024) MiB: a rounded GiB would lose a MiB."""
    plan = plan_container(
        spec(image=VZTMPL, storage='local-lvm', disk_size=declared, mount_points=[{'slot': 0, 'path': '/srv', 'size': declared}]),
        creation=Creation(Source(volume=VZTMPL), 'pve1'),
    )
    config = plan.actions[0].params['config']
    assert (config['rootfs'], config['mp0']) == (f'local-lvm:{sent}', f'local-lvm:{sent},mp=/srv')


@pytest.mark.parametrize(('option', 'value'), [('disk_size', '1536K'), ('mount_points', [{'slot': 0, 'path': '/srv', 'size': '1049601K'}])])
def test_a_volume_size_that_is_not_whole_mib_is_refused_naming_its_option(option, value):
    with pytest.raises(SpecError, match=r'not a whole number of MiB; PVE allocates a container volume in whole MiB'):
        spec(**{option: value})


def test_a_volume_whose_config_understates_it_is_measured_and_not_grown_when_it_holds_the_declared_size():
    """src/PVE/API2/LXC.pm resize_vm compares with volume_size_info: 1499M in the config, a 1500M LV, 1500M declared."""
    config = {**OWNED, 'rootfs': 'local-lvm:vm-120-disk-0,size=1499M', 'mp0': 'local-lvm:vm-120-disk-1,mp=/data,size=999M'}
    declared = spec(disk_size='1500M', mount_points=[{'slot': 0, 'path': '/data', 'size': '1000M'}])
    assert volumes_to_measure(declared, config) == {'rootfs': 'local-lvm:vm-120-disk-0', 'mp0': 'local-lvm:vm-120-disk-1'}
    assert volumes_to_measure(spec(disk_size='1499M'), config) == {}, 'a config at the declared size needs no reading'
    observed = Observed(120, 'pve1', 'stopped', config, None, volume_sizes={'rootfs': 1500 * 1024**2, 'mp0': 1000 * 1024**2})
    plan = plan_container(declared, observed)
    assert plan.actions == () and plan.changes == (), plan.diff
    grown = plan_container(spec(disk_size='1504M'), observed)
    assert grown.actions == (Action(RESIZE, {'disk': 'rootfs', 'size': '1504M'}),)
    assert (grown.diff['before']['disk_size'], grown.diff['after']['disk_size']) == ('1499M', '1504M')


def test_a_linked_clone_of_a_template_on_a_storage_without_linked_clones_is_refused_naming_linked_clone():
    """src/PVE/API2/LXC.pm clone_vm: "Linked clone feature for 'VOLID' is not available" (pve-storage Plugin.pm volume_has_feature)."""
    template = {'hostname': 'base', 'template': 1, 'rootfs': 'ctdir:900/base-900-disk-0.raw,size=4G', 'unprivileged': 1}
    creation = Creation(Source(900, 'pve1', 'base'), 'pve1', template, storage_types={'ctdir': 'dir', 'local-lvm': 'lvmthin'})
    with pytest.raises(
        SpecError, match=r"^linked_clone is true, but container template base \(900\) keeps rootfs on storage 'ctdir' \(dir\), where PVE makes no"
    ):
        plan_container(spec(image='base', linked_clone=True), creation=creation)
    assert plan_container(spec(image='base'), creation=creation).actions[0].params['full'], 'a full clone is fine'
    on_thin = Creation(creation.source, 'pve1', {**template, 'rootfs': 'local-lvm:base-900-disk-0,size=4G'}, storage_types=creation.storage_types)
    assert not plan_container(spec(image='base', linked_clone=True), creation=on_thin).actions[0].params['full']
    unknown = Creation(creation.source, 'pve1', template)
    assert not plan_container(spec(image='base', linked_clone=True), creation=unknown).actions[0].params['full'], 'a type not visible is left to PVE'
    on_thick_lvm = Creation(creation.source, 'pve1', template, storage_types={'ctdir': 'lvm'})
    with pytest.raises(SpecError, match=r"keeps rootfs on storage 'ctdir' \(lvm\), where PVE makes no linked clone"):
        plan_container(spec(image='base', linked_clone=True), creation=on_thick_lvm)
    # A storage plugin outside PVE's own (LINSTOR's drbd) answers volume_has_feature itself: PVE decides.
    on_plugin = Creation(creation.source, 'pve1', template, storage_types={'ctdir': 'drbd'})
    assert not plan_container(spec(image='base', linked_clone=True), creation=on_plugin).actions[0].params['full'], 'a plugin type is left to PVE'
