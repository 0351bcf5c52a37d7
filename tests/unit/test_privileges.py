# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The privileges a plan needs, judged against PVE's effective permissions before the first write."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._api import Credential
from ansible_collections.puls.proxmox.plugins.module_utils._ct_privileges import CT_CREATE_OLD_TAGS
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._image import CLONE, ImageSource
from ansible_collections.puls.proxmox.plugins.module_utils._iso_plan import Step
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import (
    NEW_VM,
    Grant,
    conversion_needs,
    holds,
    iso_needs,
    missing,
    need,
    notes_needs,
    os_template_needs,
    require,
    tag_needs,
    vm_needs,
)
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import VmSpec
from ansible_collections.puls.proxmox.plugins.module_utils._vm_plan import Action, Creation, Observed, plan_vm

TOKEN = Credential('puls@pve', 'automation', token_secret='s3cret')
TEMPLATE = {
    'name': 'ubuntu',
    'template': 1,
    'scsi0': 'local-lvm:base-9017-disk-0,size=3584M',
    'ide2': 'local-lvm:vm-9017-cloudinit,media=cdrom',
    'net0': 'virtio=BC:24:11:00:00:01,bridge=vmbr0',
    'boot': 'order=scsi0',
    'cores': 1,
    'memory': 1024,
}
EVERYTHING_ON_VMS = {
    '/vms': dict.fromkeys(
        ('VM.Allocate', 'VM.Clone', 'VM.Config.CPU', 'VM.Config.Cloudinit', 'VM.Config.Memory', 'VM.Config.Network', 'VM.Config.Options', 'VM.PowerMgmt'), 1
    ),
    '/storage/local-lvm': {'Datastore.AllocateSpace': 1},
    '/sdn/zones/localnetwork': {'SDN.Use': 1},
}


def grants(needs):
    return sorted((grant.privilege, grant.path) for item in needs for grant in item.grants)


def clone_plan(**declared):
    spec = VmSpec.from_params(dict(name='web1', image='9017', state='started', **declared))
    return plan_vm(spec, None, Creation(ImageSource(CLONE, vmid=9017, node='pve1', name='ubuntu'), 'pve1', TEMPLATE))


def test_a_full_clone_that_is_configured_and_started_needs_each_privilege_on_its_path():
    plan = clone_plan(vmid=100, cores=2, ip='127.0.0.5/24', gateway='127.0.0.1')
    needs = vm_needs(plan.actions, 100, TEMPLATE)
    # SDN.Use: clone_vm checks the bridge of the template's net0 (its zone is resolved from the VNet list by require).
    assert grants(needs) == [
        ('Datastore.AllocateSpace', '/storage/local-lvm'),
        ('SDN.Use', '/sdn/zones/*/vmbr0'),
        ('VM.Allocate', '/vms/100'),
        ('VM.Clone', '/vms/9017'),
        ('VM.Config.CPU', '/vms/100'),
        ('VM.Config.Cloudinit', '/vms/100'),
        ('VM.Config.Cloudinit', '/vms/100'),
        ('VM.Config.Options', '/vms/100'),
        ('VM.PowerMgmt', '/vms/100'),
    ]  # Options: the owner tag
    assert missing(EVERYTHING_ON_VMS, needs) == []


def test_a_clone_without_a_vmid_needs_vm_allocate_through_vms_or_its_pool():
    assert [item.grants for item in vm_needs(clone_plan().actions, None, TEMPLATE) if item.purpose.startswith('to create')][:2] == [
        (Grant('VM.Clone', '/vms/9017'),),
        (Grant('VM.Allocate', NEW_VM),),
    ]
    pooled = next(item for item in vm_needs(clone_plan(pool='web').actions, None, TEMPLATE) if item.grants[0].privilege == 'VM.Allocate')
    assert pooled.instead == ((Grant('VM.Allocate', '/pool/web'),),)
    assert missing({'/pool/web': {'VM.Allocate': 1}}, [pooled]) == []
    assert missing({'/vms': {'VM.Allocate': 1}}, [pooled]) == []
    assert missing({'/vms': {'VM.Audit': 1}}, [pooled]) == [(pooled, (Grant('VM.Allocate', NEW_VM),))]


def test_a_linked_clone_asks_nothing_of_the_storage():
    needs = vm_needs(clone_plan(linked_clone=True).actions, None, TEMPLATE)
    assert not [item for item in needs if item.grants[0].privilege == 'Datastore.AllocateSpace']


def test_config_keys_map_to_pves_privileges_and_a_new_disk_to_its_storage():
    change = Action(
        'configure',
        {
            'set': {
                'memory': 2048,
                'net0': 'virtio,bridge=vmbr1,tag=20',
                'tags': 'a',
                'machine': 'q35',
                'ide0': 'local:iso/x.iso,media=cdrom',
                'scsi1': 'ceph:32',
            },
            'delete': ['sshkeys', 'ide3'],
        },
    )
    assert grants(vm_needs([change], 104)) == [
        ('Datastore.AllocateSpace', '/storage/ceph'),
        ('SDN.Use', '/sdn/zones/*/vmbr1/20'),
        ('VM.Config.CDROM', '/vms/104'),
        ('VM.Config.Cloudinit', '/vms/104'),
        ('VM.Config.Disk', '/vms/104'),
        ('VM.Config.HWType', '/vms/104'),
        ('VM.Config.Memory', '/vms/104'),
        ('VM.Config.Network', '/vms/104'),
        ('VM.Config.Options', '/vms/104'),
    ]
    cloudinit = next(item for item in vm_needs([change], 104) if item.grants[0].privilege == 'VM.Config.Cloudinit')
    # PVE still takes VM.Config.Network for the cloud-init keys; regenerating the drive takes only VM.Config.Cloudinit.
    assert missing({'/vms/104': {'VM.Config.Network': 1}}, [cloudinit]) == []
    assert missing({'/vms/104': {'VM.Config.Network': 1}}, vm_needs([Action('regenerate_cloudinit')], 104))


def test_an_existing_vm_destroyed_needs_power_allocate_and_its_seed_storage():
    spec = VmSpec.from_params({'name': 'web1', 'state': 'absent'})
    observed = Observed(104, 'pve1', 'running', {'name': 'web1', 'tags': 'puls-managed', 'ide2': 'local:iso/puls-seed-web1-ab12.iso,media=cdrom'})
    assert grants(vm_needs(plan_vm(spec, observed).actions, 104)) == [
        ('Datastore.Allocate', '/storage/local'),
        ('VM.Allocate', '/vms/104'),
        ('VM.PowerMgmt', '/vms/104'),
    ]


@pytest.mark.parametrize(
    'permissions, grant, held',
    [
        ({'/': {'Sys.Modify': 1}}, Grant('Sys.Modify', '/nodes/pve1'), True),
        ({'/vms': {'VM.Allocate': 0}}, Grant('VM.Allocate', '/vms'), True),  # not propagated: on the path itself only
        ({'/vms': {'VM.Allocate': 0}}, Grant('VM.Allocate', '/vms/100'), False),
        ({'/vms': {'VM.Allocate': 1}, '/vms/100': {'VM.Audit': 1}}, Grant('VM.Allocate', '/vms/100'), False),  # a deeper ACL replaces
        ({'/vms': {'VM.Allocate': 1}}, Grant('VM.Allocate', NEW_VM), True),
        ({'/storage/local': {'Datastore.Audit': 1}}, Grant('Datastore.Audit', '/storage/local-lvm'), False),
        ({}, Grant('VM.Audit', '/vms/1'), False),
    ],
)
def test_a_privilege_is_held_as_the_nearest_listed_path_says(permissions, grant, held):
    assert holds(permissions, grant) is held


def test_iso_steps_need_the_storage_node_notes_and_download_rights():
    steps = [Step('pve1', 'download', ''), Step('pve2', 'none', '')]
    needs = iso_needs(steps, 'local', download=True)
    assert grants(needs) == [('Datastore.AllocateTemplate', '/storage/local'), ('Sys.Audit', '/'), ('Sys.Modify', '/'), ('Sys.Modify', '/')]
    download = needs[1]
    assert missing({'/storage/local': {'Datastore.AllocateTemplate': 1}, '/nodes/pve1': {'Sys.AccessNetwork': 1}}, [download]) == []
    assert grants(iso_needs([Step('pve1', 'replace', '')], 'local', download=False)) == [('Datastore.AllocateTemplate', '/storage/local'), ('Sys.Modify', '/')]
    assert grants(iso_needs([Step('pve1', 'delete', '')], 'local', download=False)) == [('Datastore.Allocate', '/storage/local'), ('Sys.Modify', '/')]


def test_an_os_template_download_needs_allocate_template_on_its_storage_and_one_on_a_storage_nothing():
    needs = os_template_needs({'storage': 'local', 'template': 'debian-12-standard_12.7-1_amd64.tar.zst'}, 'pve1')
    assert grants(needs) == [('Datastore.AllocateTemplate', '/storage/local')]
    assert 'to download the OS template debian-12-standard_12.7-1_amd64.tar.zst onto storage local of pve1' in needs[0].purpose
    assert os_template_needs(None, 'pve1') == []


def test_a_conversion_needs_power_config_cloudinit_template_and_the_previous_templates_rights():
    seed = SimpleNamespace(key='ide2', volume='local:iso/puls-seed-web-build-ab.iso', cloudinit='local-lvm:cloudinit', owned=True)
    conversion = SimpleNamespace(
        build={'vmid': 120},
        status='running',
        notes='n',
        tags='puls-managed;web',
        strip=['ciuser', 'ipconfig0'],
        seed=seed,
        config={'scsi0': 'local-lvm:vm-120-disk-0', 'tags': 'puls-building;puls-managed;web'},
        previous={'vmid': 110},
        previous_config={'tags': 'puls-managed;web'},
        retired_tags='puls-managed;puls-retired;web',
        destroy_previous=True,
        name_key='name',
        addresses={},
    )
    needs = conversion_needs(conversion)
    assert grants(needs) == [
        ('Datastore.Allocate', '/storage/local'),
        ('Datastore.AllocateSpace', '/storage/local-lvm'),
        ('Sys.Modify', '/'),
        ('Sys.Modify', '/'),
        ('VM.Allocate', '/vms/110'),
        ('VM.Allocate', '/vms/120'),
        ('VM.Config.CDROM', '/vms/120'),
        ('VM.Config.Cloudinit', '/vms/120'),
        ('VM.Config.Cloudinit', '/vms/120'),
        ('VM.Config.Cloudinit', '/vms/120'),
        ('VM.Config.Options', '/vms/110'),
        ('VM.Config.Options', '/vms/120'),
        ('VM.PowerMgmt', '/vms/120'),
    ]
    # The tags the conversion changes (GuestHelpers.pm assert_tag_permissions), which require keeps where PVE asks them.
    assert [(item.tag, item.purpose) for item in needs if item.tag] == [
        ('puls-building', 'to remove the tag puls-building'),
        ('puls-retired', 'to retire the previous template: to set the tag puls-retired'),
    ]


class PermissionsClient:
    credential = TOKEN

    def __init__(self, permissions):
        self.permissions = permissions
        self.calls = []

    def get(self, path, context=None, **params):
        self.calls.append(path)
        return self.permissions


def test_require_reads_the_permissions_once_and_names_each_missing_privilege_path_and_grant():
    client = PermissionsClient({'/vms': {'VM.Audit': 1, 'VM.Clone': 1}})
    needs = [
        need('to start it', 'VM.PowerMgmt', '/vms/100'),
        need('to create it', 'VM.Allocate', NEW_VM, Grant('VM.Allocate', '/pool/web')),
        need('to clone it', 'VM.Clone', '/vms/9017'),
        need('to set cores', 'VM.Config.CPU', '/vms/100'),
    ]
    with pytest.raises(PveApiError) as refused:
        require(client, needs, 'the plan for VM web1')
    message = str(refused.value)
    assert client.calls == ['/access/permissions']
    assert message.startswith('the plan for VM web1 refused before any change: API token puls@pve!automation lacks privileges')
    assert 'Permission check failed (/vms/100, VM.PowerMgmt) to start it' in message
    assert f'Permission check failed ({NEW_VM}, VM.Allocate) to create it (VM.Allocate on /pool/web would do as well)' in message
    assert 'VM.Clone' not in message
    # One pveum command per path; a VM whose VMID is not known yet is reached through /vms.
    assert "grant VM.PowerMgmt, VM.Config.CPU on /vms/100 to API token puls@pve!automation" in message
    assert "pveum acl modify /vms --tokens 'puls@pve!automation' --roles <a role with VM.Allocate>" in message
    assert 's3cret' not in message


def test_require_asks_nothing_when_the_plan_writes_nothing_and_passes_when_all_is_held():
    client = PermissionsClient({'/': {'VM.Config.Options': 1}})
    require(client, [], 'nothing')
    assert client.calls == []
    require(client, notes_needs(100), 'recording')
    assert client.calls == ['/access/permissions']


POOL_ONLY = {
    '/pool/web': dict.fromkeys(
        ('VM.Allocate', 'VM.Clone', 'VM.Config.CPU', 'VM.Config.Cloudinit', 'VM.Config.Memory', 'VM.Config.Network', 'VM.Config.Options', 'VM.PowerMgmt'), 1
    ),
    # the template is a member of the pool: PVE lists it with the pool's privileges (RPCEnvironment.pm)
    '/vms/9017': {'VM.Clone': 1},
    '/storage/local-lvm': {'Datastore.AllocateSpace': 1},
    '/sdn/zones/localnetwork': {'SDN.Use': 1},
}


def test_every_need_of_a_new_vm_in_a_pool_is_met_by_the_pools_grants():
    pooled = vm_needs(clone_plan(pool='web', cores=2, ip='127.0.0.5/24', gateway='127.0.0.1').actions, None, TEMPLATE)
    assert missing(POOL_ONLY, pooled) == []
    # The same token without the pool declared: the new VM is reached through /vms only.
    alone = vm_needs(clone_plan(cores=2, ip='127.0.0.5/24', gateway='127.0.0.1').actions, None, TEMPLATE)
    assert sorted({grant.privilege for _item, lacking in missing(POOL_ONLY, alone) for grant in lacking}) == [
        'VM.Allocate',
        'VM.Config.CPU',
        'VM.Config.Cloudinit',
        'VM.Config.Options',
        'VM.PowerMgmt',
    ]


def test_a_pool_grant_does_not_reach_an_existing_vm_outside_the_pool():
    needs = vm_needs([Action('start', {})], 104)
    assert missing(POOL_ONLY, needs) == [(needs[0], (Grant('VM.PowerMgmt', '/vms/104'),))]


def test_a_cloud_init_drive_set_by_an_update_needs_cloudinit_and_cdrom():
    needs = vm_needs([Action('configure', {'set': {'ide2': 'local-lvm:cloudinit'}, 'delete': []})], 104)
    assert grants(needs) == [('Datastore.AllocateSpace', '/storage/local-lvm'), ('VM.Config.CDROM', '/vms/104'), ('VM.Config.Cloudinit', '/vms/104')]
    assert missing({'/vms/104': {'VM.Config.Cloudinit': 1}, '/storage/local-lvm': {'Datastore.AllocateSpace': 1}}, needs)


def test_importing_a_vms_disk_needs_vm_clone_on_its_owner_and_an_import_volume_read_access_to_its_storage():
    def source_needs(source):
        action = Action('import', {'node': 'pve1', 'config': {'name': 'web1', 'scsi0': f'local-lvm:0,import-from={source}'}})
        return [item for item in vm_needs([action], None) if item.purpose.startswith(('to import', 'to read'))]

    assert [item.grants for item in source_needs('local-lvm:base-9017-disk-0')] == [(Grant('VM.Clone', '/vms/9017'),)]
    assert [item.grants for item in source_needs('local:9017/vm-9017-disk-0.qcow2')] == [(Grant('VM.Clone', '/vms/9017'),)]
    (imported,) = source_needs('local:import/noble.qcow2')
    assert imported.grants == (Grant('Datastore.Audit', '/storage/local'),)
    for privilege in ('Datastore.Audit', 'Datastore.AllocateSpace', 'Datastore.Allocate'):
        assert missing({'/storage/local': {privilege: 1}}, [imported]) == []


class SdnClient(PermissionsClient):
    def __init__(self, permissions, vnets):
        super().__init__(permissions)
        self.vnets = vnets

    def get(self, path, context=None, **params):
        self.calls.append(path)
        if path == '/cluster/sdn/vnets':
            if self.vnets is None:
                raise PveApiError('GET /cluster/sdn/vnets: 501 Method not implemented')
            return self.vnets
        return self.permissions


NIC = [Action('configure', {'set': {'net0': 'virtio,bridge=web,tag=20'}, 'delete': []})]


def test_a_vnet_bridge_needs_sdn_use_in_the_vnets_own_zone():
    vnets = [{'vnet': 'web', 'zone': 'dmz', 'type': 'vnet'}]
    on_local = SdnClient({'/vms/104': {'VM.Config.Network': 1}, '/sdn/zones/localnetwork': {'SDN.Use': 1}}, vnets)
    with pytest.raises(PveApiError) as refused:
        require(on_local, vm_needs(NIC, 104), 'the plan for VM web1')
    assert on_local.calls == ['/cluster/sdn/vnets', '/access/permissions']
    assert 'Permission check failed (/sdn/zones/dmz/web/20, SDN.Use) to connect net0 to web' in str(refused.value)
    assert 'grant SDN.Use on /sdn/zones/dmz/web/20' in str(refused.value)
    require(SdnClient({'/vms/104': {'VM.Config.Network': 1}, '/sdn/zones/dmz': {'SDN.Use': 1}}, vnets), vm_needs(NIC, 104), 'plan')


@pytest.mark.parametrize('vnets', [[], None], ids=['not listed', 'list unreadable'])
def test_a_bridge_the_vnet_list_does_not_name_is_asked_in_localnetwork_or_any_zone(vnets):
    with pytest.raises(PveApiError) as refused:
        require(SdnClient({'/vms/104': {'VM.Config.Network': 1}}, vnets), vm_needs(NIC, 104), 'the plan for VM web1')
    assert 'Permission check failed (/sdn/zones/localnetwork/web/20, SDN.Use)' in str(refused.value)
    # A VNet the token may not list (no SDN.Audit): its grant in the VNet's zone is accepted, PVE judges the zone.
    for granted in ('/sdn/zones/localnetwork/web', '/sdn/zones/dmz/web', '/sdn/zones/dmz', '/sdn'):
        require(SdnClient({'/vms/104': {'VM.Config.Network': 1}, granted: {'SDN.Use': 1}}, vnets), vm_needs(NIC, 104), 'plan')


def test_a_plan_without_a_nic_change_does_not_read_the_vnet_list():
    client = SdnClient({'/vms/104': {'VM.Config.CPU': 1}}, [])
    require(client, vm_needs([Action('configure', {'set': {'cores': 2}, 'delete': []})], 104), 'plan')
    assert client.calls == ['/access/permissions']


class TagSettingsClient(PermissionsClient):
    """GET /access/permissions and GET /cluster/options (pve-manager API2/Cluster.pm get_options)."""

    def __init__(self, permissions, options):
        super().__init__(permissions)
        self.options = options

    def get(self, path, context=None, **params):
        self.calls.append(path)
        return self.options if path == '/cluster/options' else self.permissions


def tag_plan(tags_now, declared):
    return [Action('configure', {'set': {'tags': declared}, 'delete': []})], tags_now


def test_each_tag_set_or_removed_is_a_need_of_sys_modify_on_root_and_a_create_checks_its_old_tags_too():
    needs = tag_needs(*tag_plan('legacy;puls-managed', 'puls-managed;web'))
    assert [(item.tag, item.purpose) for item in needs] == [('legacy', 'to remove the tag legacy'), ('web', 'to set the tag web')]
    assert grants(needs) == [('Sys.Modify', '/')] * 2
    created = tag_needs([Action('import', {'config': {'tags': 'puls-managed'}})], None)
    assert [item.tag for item in created] == ['HASH(0x...)', 'puls-managed']
    assert tag_needs([Action('configure', {'set': {'cores': 2}, 'delete': []})], 'web') == []


def test_a_containers_create_checks_its_tags_against_none_and_an_update_against_the_config():
    # pve-container src/PVE/LXC.pm check_ct_modify_config_perm: no old config on create, so no HASH(0x...) tag.
    created = tag_needs([Action('create', {'config': {'tags': 'puls-managed;web'}})], None, CT_CREATE_OLD_TAGS)
    assert [(item.tag, item.purpose) for item in created] == [('puls-managed', 'to set the tag puls-managed'), ('web', 'to set the tag web')]
    # A clone copies the source's tags unchecked; the configure after it changes them from those.
    cloned = [Action('clone', {'vmid': 9020}), Action('configure', {'set': {'tags': 'puls-managed'}, 'delete': []})]
    assert [item.tag for item in tag_needs(cloned, 'puls-base;puls-managed', CT_CREATE_OLD_TAGS)] == ['puls-base']
    # A VM's create with the same tags also changes the one old tag qemu-server's create_vm passes.
    assert [item.tag for item in tag_needs([Action('import', {'config': {'tags': 'puls-managed;web'}})], None)] == ['HASH(0x...)', 'puls-managed', 'web']


def test_a_tag_need_is_asked_only_where_the_datacenters_tag_settings_make_pve_ask_it():
    audit = {'/': {'Sys.Audit': 1}, '/vms': {'VM.Config.Options': 1}}
    options = {'user-tag-access': {'user-allow': 'list', 'user-allow-list': ['web']}, 'registered-tags': ['prod'], 'allowed-tags': ['web']}
    client = TagSettingsClient(audit, options)
    require(client, tag_needs(*tag_plan('', 'web')), 'tagging')
    with pytest.raises(PveApiError, match=r'Permission check failed \(/, Sys.Modify\) to set the tag db'):
        require(client, tag_needs(*tag_plan('', 'db;web')), 'tagging')
    with pytest.raises(PveApiError, match=r'Permission check failed \(/, Sys.Modify\) to set the tag prod'):
        require(TagSettingsClient(audit, dict(options, **{'user-tag-access': {}})), tag_needs(*tag_plan('', 'prod;anything')), 'tagging')
    # Free tags: only a registered one needs Sys.Modify; Sys.Modify on / itself needs no look at the settings.
    require(TagSettingsClient(audit, {'allowed-tags': []}), tag_needs(*tag_plan('', 'anything')), 'tagging')
    held = TagSettingsClient({'/': {'Sys.Modify': 1}}, options)
    require(held, tag_needs(*tag_plan('', 'db')), 'tagging')
    assert held.calls == ['/access/permissions']


def test_without_sys_audit_the_tag_settings_are_not_seen_and_no_tag_need_is_asked():
    client = TagSettingsClient({'/vms': {'VM.Config.Options': 1}}, {'allowed-tags': []})
    require(client, tag_needs(*tag_plan('', 'db')), 'tagging')
    assert client.calls == ['/access/permissions', '/cluster/options']
