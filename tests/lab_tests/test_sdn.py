"""SDN VNets and the bridge check of a VM's NICs (lab/pve/sdn.py): SDN.Use in the VNet's own zone, localnetwork for a
plain bridge, per VLAN tag; the VNet list shows what the user may audit."""

import requests
from test_privileges import as_token

CONFIG = '/nodes/pve1/qemu/9017/config'
VM_PRIVS = ['VM.Audit', 'VM.Config.Network', 'VM.Allocate', 'VM.Clone', 'VM.Config.Options']


def token(lab, name, grants):
    tokenid = lab.call(lambda: lab.pve.add_api_token('carol@pve', name, name + '-secret', grants))
    return as_token(lab, tokenid, name + '-secret')


def test_a_nic_on_a_plain_bridge_needs_sdn_use_in_localnetwork(lab):
    bare = token(lab, 'bare', {'/vms': VM_PRIVS})
    assert bare('PUT', CONFIG, net1='virtio,bridge=vmbr1') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1, SDN.Use)')
    local = token(lab, 'local', {'/vms': VM_PRIVS, '/sdn/zones/localnetwork': ['SDN.Use']})
    assert local('PUT', CONFIG, net1='virtio,bridge=vmbr1')[0] == 200


def test_a_nic_on_a_vnet_needs_sdn_use_in_the_vnets_own_zone(lab):
    lab.call(lambda: lab.pve.add_vnet('web', 'dmz'))
    local = token(lab, 'local', {'/vms': VM_PRIVS, '/sdn/zones/localnetwork': ['SDN.Use']})
    assert local('PUT', CONFIG, net1='virtio,bridge=web') == (403, 'Permission check failed (/sdn/zones/dmz/web, SDN.Use)')
    zone = token(lab, 'zone', {'/vms': VM_PRIVS, '/sdn/zones/dmz': ['SDN.Use']})
    assert zone('PUT', CONFIG, net1='virtio,bridge=web')[0] == 200


def test_a_vlan_tag_and_each_trunk_tag_are_checked_on_their_own_path(lab):
    vlan = token(lab, 'vlan', {'/vms': VM_PRIVS, '/sdn/zones/localnetwork/vmbr1/30': ['SDN.Use']})
    assert vlan('PUT', CONFIG, net1='virtio,bridge=vmbr1,tag=20') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1/20, SDN.Use)')
    assert vlan('PUT', CONFIG, net1='virtio,bridge=vmbr1,tag=30')[0] == 200
    assert vlan('PUT', CONFIG, net2='virtio,bridge=vmbr1,trunks=29-31') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1/29, SDN.Use)')


def test_replacing_or_deleting_a_nic_checks_the_bridge_it_leaves(lab):
    lab.call(lambda: lab.pve.add_vnet('web', 'dmz'))
    zone = token(lab, 'zone', {'/vms': VM_PRIVS, '/sdn/zones/dmz': ['SDN.Use']})
    # The template's net0 is on vmbr0, a plain bridge the token may not use.
    assert zone('PUT', CONFIG, net0='virtio,bridge=web') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)')
    assert zone('PUT', CONFIG, delete='net0') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)')


def test_a_clone_and_a_create_check_the_bridges_of_their_config(lab):
    grants = {'/vms': VM_PRIVS, '/storage': ['Datastore.AllocateSpace', 'Datastore.Audit']}
    bare = token(lab, 'bare', grants)
    assert bare('POST', '/nodes/pve1/qemu/9017/clone', newid=140, name='c1') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)')
    assert bare('POST', '/nodes/pve1/qemu', vmid=141, name='n1', net0='virtio,bridge=vmbr2') == (
        403,
        'Permission check failed (/sdn/zones/localnetwork/vmbr2, SDN.Use)',
    )
    assert lab.pve.vm(140) is None and lab.pve.vm(141) is None


def test_the_vnet_list_shows_only_the_vnets_the_user_may_audit(lab, api):
    lab.call(lambda: (lab.pve.add_vnet('web', 'dmz'), lab.pve.add_vnet('db', 'back')))
    assert [(item['vnet'], item['zone']) for item in api.data('GET', '/cluster/sdn/vnets')] == [('db', 'back'), ('web', 'dmz')]
    lab.call(lambda: lab.pve.add_api_token('carol@pve', 'audit', 'audit-secret', {'/sdn/zones/dmz': ['SDN.Audit'], '/sdn/zones/back': ['SDN.Use']}))
    response = requests.get(
        lab.url + '/api2/json/cluster/sdn/vnets', verify=lab.cafile, timeout=30, headers={'Authorization': 'PVEAPIToken=carol@pve!audit=audit-secret'}
    )
    assert response.status_code == 200
    assert [(item['vnet'], item['zone']) for item in response.json()['data']] == [('web', 'dmz')]


def test_the_asynchronous_config_update_refuses_a_bridge_before_its_task(lab):
    bare = token(lab, 'bare', {'/vms': VM_PRIVS})
    assert bare('POST', CONFIG, net1='virtio,bridge=vmbr1') == (403, 'Permission check failed (/sdn/zones/localnetwork/vmbr1, SDN.Use)')
