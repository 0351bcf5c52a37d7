# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A container's further network devices (``nets``): declared properties only, the MAC kept, undeclared devices left alone."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._ct_config import CtSpec
from ansible_collections.puls.proxmox.plugins.module_utils._ct_plan import CONFIGURE, CREATE, Creation, Observed, Source, plan_container
from ansible_collections.puls.proxmox.plugins.module_utils._ct_privileges import container_needs
from ansible_collections.puls.proxmox.plugins.module_utils._vm_config import SpecError

VZTMPL = 'local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst'
OWNED = {
    'hostname': 'web',
    'memory': 512,
    'rootfs': 'local-lvm:vm-120-disk-0,size=4G',
    'net0': 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=127.0.0.5/24,gw=127.0.0.1,type=veth',
    'net1': 'name=eth1,bridge=vmbr1,hwaddr=BC:24:11:00:00:02,ip=127.0.1.5/24,tag=20,type=veth',
    'net2': 'name=eth2,bridge=vmbr0,hwaddr=BC:24:11:00:00:03,ip=dhcp,type=veth',
    'unprivileged': 1,
    'tags': 'puls-managed',
    'description': '[puls-owner: puls-managed=120]',
}


def spec(**options):
    return CtSpec.from_params({'name': 'web', **options})


def running(config=None):
    config = OWNED if config is None else config
    return Observed(120, 'pve1', 'running', dict(config), dict(config))


def test_a_drifted_device_gets_its_declared_properties_over_its_mac_and_the_rest_and_others_are_left_alone():
    plan = plan_container(spec(nets=[{'slot': 'net1', 'bridge': 'vmbr1', 'vlan': 30, 'mtu': 1400}]), running())
    assert [action.kind for action in plan.actions] == [CONFIGURE]
    assert plan.actions[0].params == {
        'set': {'net1': 'name=eth1,bridge=vmbr1,hwaddr=BC:24:11:00:00:02,ip=127.0.1.5/24,tag=30,type=veth,mtu=1400'},
        'delete': [],
    }
    assert plan.before['net1'] == {'bridge': 'vmbr1', 'tag': '20', 'mtu': None}
    assert plan.after['net1'] == {'bridge': 'vmbr1', 'tag': '30', 'mtu': '1400'}
    assert 'net0' not in plan.after and 'net2' not in plan.after
    assert plan.reboot_required == (), 'a running container takes a netN change at once'


def test_a_device_as_declared_plans_nothing_whatever_the_case_of_its_mac_and_the_form_of_its_flags():
    config = {**OWNED, 'net1': OWNED['net1'].replace('BC:24', 'bc:24') + ',firewall=1'}
    plan = plan_container(spec(nets=[{'slot': 1, 'ip': '127.0.1.5/24', 'firewall': True}], tags=[]), running(config))
    assert plan.actions == ()
    assert plan.before['net1'] == plan.after['net1'] == {'ip': '127.0.1.5/24', 'firewall': '1'}


def test_a_new_device_is_ethN_on_vmbr0_with_what_is_declared_and_no_gateway_unless_declared():
    plan = plan_container(spec(nets=[{'slot': 'net3', 'ip': '127.0.3.5'}, {'slot': 'net4', 'name': 'data', 'bridge': 'vmbr2', 'ip': 'dhcp'}]), running())
    assert plan.actions[0].params['set'] == {'net3': 'name=eth3,bridge=vmbr0,ip=127.0.3.5/24', 'net4': 'name=data,bridge=vmbr2,ip=dhcp'}
    assert plan.before['net3'] is None
    assert plan.after['net4'] == {'name': 'data', 'bridge': 'vmbr2', 'ip': 'dhcp'}


def test_a_create_sends_every_declared_device_and_needs_the_bridge_of_each():
    creation = Creation(Source(volume=VZTMPL), 'pve1')
    declared = spec(
        image=VZTMPL, storage='local-lvm', ip='127.0.0.5/24', nets=[{'slot': 'net1', 'bridge': 'vmbr1', 'ip': '127.0.1.5/24', 'gateway': '127.0.1.254'}]
    )
    plan = plan_container(declared, None, creation)
    config = plan.actions[0].params['config']
    assert plan.actions[0].kind == CREATE
    assert config['net0'] == 'name=eth0,bridge=vmbr0,ip=127.0.0.5/24,gw=127.0.0.1'
    assert config['net1'] == 'name=eth1,bridge=vmbr1,ip=127.0.1.5/24,gw=127.0.1.254'
    assert plan.after['net1'] == {'bridge': 'vmbr1', 'ip': '127.0.1.5/24', 'gw': '127.0.1.254'}
    bridges = {grant.path for item in container_needs(plan.actions, None) for grant in item.grants if grant.privilege == 'SDN.Use'}
    assert bridges == {'/sdn/zones/*/vmbr0', '/sdn/zones/*/vmbr1'}


@pytest.mark.parametrize(
    ('options', 'option', 'words'),
    [
        ({'nets': [{'slot': 'net32'}]}, 'nets[0].slot', 'net0 to net31'),
        ({'nets': [{'slot': 'net1'}, {'slot': 1}]}, 'nets', 'net1 more than once'),
        ({'nets': [{'slot': 'net1', 'gateway': '127.0.1.1'}]}, 'nets[0].gateway', 'static ip'),
        ({'nets': [{'slot': 'net1', 'ip': 'dhcp', 'gateway': '127.0.1.1'}]}, 'nets[0].gateway', 'static ip'),
        ({'nets': [{'slot': 'net1', 'mtu': 63}]}, 'nets[0].mtu', '64 to 65535'),
        ({'nets': [{'slot': 'net1', 'rate': 0}]}, 'nets[0].rate', 'positive'),
        ({'nets': [{'slot': 'net1', 'name': 'eth 1'}]}, 'nets[0].name', 'interface name'),
        ({'nets': [{'slot': 'net1', 'speed': 1}]}, 'nets[0]', 'unknown key'),
        ({'bridge': 'vmbr0', 'nets': [{'slot': 'net0', 'vlan': 5}]}, 'nets', 'net0 in one place'),
    ],
)
def test_bad_devices_name_their_entry(options, option, words):
    with pytest.raises(SpecError) as raised:
        spec(**options)
    assert raised.value.option == option and words in str(raised.value), str(raised.value)


def test_net0_in_nets_is_managed_there_when_the_flat_options_are_not_declared():
    plan = plan_container(spec(nets=[{'slot': 'net0', 'firewall': True, 'rate': 12.5}], tags=[]), running())
    assert plan.actions[0].params['set'] == {
        'net0': 'name=eth0,bridge=vmbr0,hwaddr=BC:24:11:00:00:01,ip=127.0.0.5/24,gw=127.0.0.1,type=veth,firewall=1,rate=12.5'
    }
