# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_node_network's planner: declared interfaces against the node's listed ones give the create, update, delete and
one apply that converge them; it refuses unowned and management interfaces, and changes someone else staged."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.puls.proxmox.plugins.module_utils._network_plan import (
    APPLY,
    CREATE,
    DELETE,
    UPDATE,
    NetworkOptionError,
    NetworkRefused,
    Observed,
    check_options,
    management_chain,
    plan,
)
from ansible_collections.puls.proxmox.plugins.modules import pve_node_network

ADDRESS = '127.0.0.201'
# The installer's network as GET /nodes/pve1/network lists it.
INSTALLED = {
    'eno1': {'iface': 'eno1', 'type': 'eth', 'method': 'manual', 'exists': 1},
    'eno2': {'iface': 'eno2', 'type': 'eth', 'method': 'manual', 'exists': 1},
    'eno3': {'iface': 'eno3', 'type': 'eth', 'method': 'manual', 'exists': 1},
    'vmbr0': {'iface': 'vmbr0', 'type': 'bridge', 'bridge_ports': 'eno1', 'cidr': ADDRESS + '/24', 'address': ADDRESS, 'autostart': 1, 'method': 'static'},
}


def spec(*interfaces, **options):
    return check_options(dict({'node': 'pve1', 'interfaces': [dict({'autostart': True}, **item) for item in interfaces]}, **options))


def observed(extra=None, changes=None, **replaced):
    interfaces = dict(INSTALLED, **(extra or {}))
    interfaces.update(replaced)
    return Observed(interfaces, changes, ADDRESS)


def kinds(result):
    return [(action.kind, action.params.get('iface')) for action in result.actions]


def owned(name, **settings):
    return {name: dict({'iface': name, 'comments': 'puls-managed\n', 'autostart': 1}, **settings)}


def test_a_new_bridge_is_created_with_the_mark_then_applied_once():
    result = plan(spec({'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2'], 'cidr': '127.0.0.5/8', 'vlan_aware': True}), observed())
    assert kinds(result) == [(CREATE, 'vmbr1'), (APPLY, None)]
    assert result.actions[0].params['params'] == {
        'type': 'bridge',
        'bridge_ports': 'eno2',
        'cidr': '127.0.0.5/8',
        'bridge_vlan_aware': 1,
        'autostart': 1,
        'comments': 'puls-managed',
    }
    assert result.diff['before'] == {'vmbr1': None}
    assert result.diff['after']['vmbr1']['managed'] is True and result.changes == ('vmbr1',)


def test_an_interface_as_declared_plans_nothing_and_comments_compare_without_the_mark():
    have = owned('vmbr1', type='bridge', bridge_ports='eno2', cidr='127.0.0.5/8', mtu='1500', comments='Guests\npuls-managed\n')
    declared = {'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2'], 'cidr': '127.0.0.5/8', 'mtu': 1500, 'comments': 'Guests'}
    result = plan(spec(declared), observed(have))
    assert result.actions == () and result.diff['before'] == result.diff['after']


def test_an_update_sends_its_type_what_changed_and_the_address_again():
    have = owned('vmbr1', type='bridge', bridge_ports='eno2', cidr='127.0.0.5/8', bridge_vlan_aware=1, bridge_vids='2-4094')
    result = plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400, 'vlan_aware': False}), observed(have))
    assert kinds(result) == [(UPDATE, 'vmbr1'), (APPLY, None)]
    # update_network sets method static only when sent an address; bridge_vlan_aware=0 would still be VLAN-aware.
    assert result.actions[0].params == {
        'iface': 'vmbr1',
        'params': {'type': 'bridge', 'mtu': 1400, 'cidr': '127.0.0.5/8'},
        'delete': ['bridge_vlan_aware', 'bridge_vids'],
    }


# vmbr0 as an admin extends the installer's: an IPv6 address beside the IPv4 one (GET /nodes/pve1/network).
DUAL_STACK = dict(
    INSTALLED['vmbr0'],
    families=['inet', 'inet6'],
    method6='static',
    cidr6='fe80::201/64',
    address6='fe80::201',
    netmask6='64',
    gateway6='fe80::1',
)


def test_an_update_sends_the_ipv6_address_again_so_that_pve_keeps_its_stanza():
    result = plan(spec({'name': 'vmbr0', 'type': 'bridge', 'comments': 'Management'}, adopt=True, allow_management_change=True), observed(vmbr0=DUAL_STACK))
    assert result.actions[0].params['params'] == {
        'type': 'bridge',
        'comments': 'Management\npuls-managed',
        'cidr': ADDRESS + '/24',
        'cidr6': 'fe80::201/64',
    }
    # An IPv6-only bridge is sent its IPv6 address alone; the release of its ports too.
    have = owned('vmbr1', type='bridge', bridge_ports='eno2 eno3', families=['inet6'], method6='static', cidr6='fe80::11/64')
    moved = plan(spec({'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno3']}), observed(have))
    assert [action.params['params'] for action in moved.actions[:-1]] == [
        {'type': 'bridge', 'cidr6': 'fe80::11/64', 'bridge_ports': 'eno3'},
        {'type': 'bridge', 'bridge_ports': 'eno3', 'cidr6': 'fe80::11/64'},
    ]


def test_an_update_pve_would_not_keep_dhcp_slaac_or_a_stanzas_options_through_is_refused():
    dhcp = {'iface': 'vmbr10', 'type': 'bridge', 'bridge_ports': 'eno4', 'autostart': 1, 'families': ['inet', 'inet6'], 'method': 'dhcp', 'method6': 'auto'}
    with pytest.raises(NetworkRefused) as refused:
        plan(spec({'name': 'vmbr10', 'type': 'bridge'}, adopt=True), observed({'vmbr10': dhcp}))
    message = str(refused.value)
    assert message.startswith('interfaces[0]: vmbr10 on pve1 takes its IPv4 address by DHCP (inet dhcp); PVE would make it manual.')
    assert 'update_network' in message and 'declare its cidr' in message and "add the comment line 'puls-managed'" in message
    assert message.endswith('Nothing was changed.')
    # A declared address makes it static, as asked; SLAAC, which this module cannot declare, is refused still.
    with pytest.raises(NetworkRefused, match=r'interfaces\[0\]: vmbr10 on pve1 takes its IPv6 address by SLAAC \(inet6 auto\)'):
        plan(spec({'name': 'vmbr10', 'type': 'bridge', 'cidr': '127.0.0.9/24'}, adopt=True), observed({'vmbr10': dhcp}))
    v4_dhcp = dict(dhcp, families=['inet'], method6='manual')
    assert kinds(plan(spec({'name': 'vmbr10', 'type': 'bridge', 'cidr': '127.0.0.9/24'}, adopt=True), observed({'vmbr10': v4_dhcp}))) == [
        (UPDATE, 'vmbr10'),
        (APPLY, None),
    ]
    # Options of a stanza without an address: the inet6 one goes with any update, the inet one when only IPv6 is sent.
    ra = owned('vmbr1', type='bridge', families=['inet', 'inet6'], method6='manual', options6=['accept_ra 2'])
    with pytest.raises(NetworkRefused, match=r"vmbr1 on pve1 has an IPv6 stanza \(inet6 manual\) with no address but the options 'accept_ra 2'"):
        plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400}), observed(ra))
    hooked = owned('vmbr1', type='bridge', families=['inet', 'inet6'], method6='static', cidr6='fe80::11/64', options=['post-up true'])
    with pytest.raises(NetworkRefused, match=r"has an IPv4 stanza \(inet manual\) with no address but the options 'post-up true'"):
        plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400}), observed(hooked))
    # A gateway without an address goes with its stanza too.
    routed = owned('vmbr1', type='bridge', families=['inet', 'inet6'], method6='static', gateway6='fe80::1')
    with pytest.raises(NetworkRefused, match=r"vmbr1 on pve1 has an IPv6 stanza \(inet6 static\) with no address but the options 'gateway fe80::1'"):
        plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400}), observed(routed))
    # A stanza without a family (ifupdown2's `iface vmbr1`) keeps its options as the inet ones: sent only its IPv6
    # address, PVE writes it as an inet6 stanza without them.
    typeless = owned('vmbr1', type='bridge', families=[None], cidr6='fe80::11/64', options=['post-up true'])
    with pytest.raises(NetworkRefused, match=r"has a stanza without a family, with an IPv6 address only and the options 'post-up true'"):
        plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400}), observed(typeless))
    dual = {'vmbr1': dict(typeless['vmbr1'], cidr='127.0.0.5/24')}
    assert kinds(plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400}), observed(dual))) == [
        (UPDATE, 'vmbr1'),
        (APPLY, None),
    ]
    # Nothing to change, nothing sent: a marked DHCP bridge declared as it is stays as it is.
    assert plan(spec({'name': 'vmbr10', 'type': 'bridge'}), observed({'vmbr10': dict(dhcp, comments='puls-managed\n')})).actions == ()


def test_an_update_that_must_send_again_an_address_pve_refuses_is_refused_before_any_write():
    """A hand-written address the update must send again (update_network keeps only those it is sent): PVE's
    check_ipv6_settings refuses an IPv6 one of a reserved type, and CIDRv4/CIDRv6 a prefix length below 8."""
    for key, cidr, problem in (
        ('cidr6', 'fec0::5/64', 'fec0::5 is outside the global (2000::/3), unique-local (fc00::/7) and link-local (fe80::/10) unicast ranges'),
        ('cidr6', 'ffff:ffff:ffff:ffff::/64', "ffff:ffff:ffff:ffff:: is of the type 'ANYCAST'"),
        ('cidr6', 'fe80::5/4', 'the prefix length of fe80::5/4 is not 8 to 128'),
        ('cidr', '127.0.0.5/4', 'the prefix length of 127.0.0.5/4 is not 8 to 32'),
    ):
        have = owned('vmbr1', type='bridge', families=['inet', 'inet6'], method='static', method6='static', **{key: cidr})
        with pytest.raises(NetworkRefused) as refused:
            plan(spec({'name': 'vmbr1', 'type': 'bridge', 'mtu': 1400}), observed(have))
        message = str(refused.value)
        assert message.startswith(f'interfaces[0]: vmbr1 on pve1 has the IPv{6 if key == "cidr6" else 4} address {cidr}, written on the node'), message
        assert problem in message and 'Correct it on the node itself (/etc/network/interfaces)' in message
    # Declared, an address replaces the written one, which is then not sent.
    have = owned('vmbr1', type='bridge', method='static', cidr='127.0.0.5/4')
    assert kinds(plan(spec({'name': 'vmbr1', 'type': 'bridge', 'cidr': '127.0.0.5/24'}), observed(have))) == [(UPDATE, 'vmbr1'), (APPLY, None)]
    # Unchanged, nothing is sent and nothing refused.
    assert plan(spec({'name': 'vmbr1', 'type': 'bridge'}), observed(owned('vmbr1', type='bridge', cidr6='fec0::5/64'))).actions == ()


def test_a_bridge_declared_without_ports_has_none_and_keeps_none():
    result = plan(spec({'name': 'vmbr2', 'type': 'bridge', 'ports': []}), observed())
    assert result.actions[0].params['params'] == {'type': 'bridge', 'autostart': 1, 'comments': 'puls-managed'}
    assert plan(spec({'name': 'vmbr2', 'type': 'bridge', 'ports': []}), observed(owned('vmbr2', type='bridge'))).actions == ()
    emptied = plan(spec({'name': 'vmbr2', 'type': 'bridge', 'ports': []}), observed(owned('vmbr2', type='bridge', bridge_ports='eno2')))
    assert [action.params['delete'] for action in emptied.actions[:-1]] == [['bridge_ports']]


def test_ports_moved_between_interfaces_are_released_before_deletes_and_creates():
    have = {
        **owned('bond0', type='bond', slaves='eno2 eno3', bond_mode='balance-rr'),
        **owned('vmbr1', type='bridge', bridge_ports='bond0'),
        **owned('vmbr1.30', type='vlan', **{'vlan-raw-device': 'vmbr1'}),
    }
    declared = [{'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2']}, {'name': 'bond1', 'type': 'bond', 'ports': ['eno3']}]
    result = plan(spec(*declared, prune=True), observed(have))
    assert kinds(result) == [(UPDATE, 'vmbr1'), (DELETE, 'vmbr1.30'), (DELETE, 'bond0'), (CREATE, 'bond1'), (UPDATE, 'vmbr1'), (APPLY, None)]
    assert result.actions[0].params['delete'] == ['bridge_ports'] and result.actions[0].params['release'] is True
    assert result.actions[4].params['params']['bridge_ports'] == 'eno2'


def test_a_port_or_the_default_gateway_another_interface_keeps_is_refused_before_any_write():
    """check_duplicate_ports and check_duplicate_gateway, met by each create and update as the plan leaves the others."""
    vmbr0 = dict(INSTALLED['vmbr0'], gateway='127.0.0.1')
    with pytest.raises(NetworkRefused) as refused:
        plan(spec({'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno1', 'eno2'], 'gateway': '127.0.0.1'}), observed(vmbr0=vmbr0))
    message = str(refused.value)
    assert message.startswith('interfaces[0].ports: vmbr1 on pve1: eno1 is a port of vmbr0 too; a port is on one interface only'), message
    assert 'interfaces[0].gateway: vmbr1 on pve1: vmbr0 has the default gateway; a node has one only' in message
    # Two declared interfaces wanting one port; a port or gateway kept by an interface the run deletes is free.
    with pytest.raises(NetworkRefused, match=r'interfaces\[1\]\.ports: vmbr2 on pve1: eno2 is a port of vmbr1 too'):
        plan(spec({'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2']}, {'name': 'vmbr2', 'type': 'bridge', 'ports': ['eno2']}), observed())
    have = owned('vmbr5', type='bridge', bridge_ports='eno2', gateway='127.0.0.1')
    freed = plan(spec({'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2'], 'gateway': '127.0.0.1'}, prune=True), observed(have))
    assert kinds(freed) == [(DELETE, 'vmbr5'), (CREATE, 'vmbr1'), (APPLY, None)]
    # A gateway or port an interface has already is not sent again, so not refused.
    kept = spec({'name': 'vmbr0', 'type': 'bridge', 'ports': ['eno1'], 'gateway': '127.0.0.1'}, adopt=True, allow_management_change=True)
    assert plan(kept, observed(vmbr0=vmbr0)).actions[0].params['params'] == {'comments': 'puls-managed', 'type': 'bridge', 'cidr': ADDRESS + '/24'}


def test_a_bond_keeps_its_bond_primary_among_its_slaves_at_every_write():
    """Interfaces.pm "check bond": a bond with slaves has its bond-primary among them, in any mode, at every write."""
    bond = owned('bond0', type='bond', slaves='eno2 eno3', bond_mode='active-backup', **{'bond-primary': 'eno2'})
    declared = {'name': 'bond0', 'type': 'bond', 'ports': ['eno3', 'eno4'], 'bond_mode': 'active-backup', 'bond_primary': 'eno4'}
    moved = plan(spec(declared), observed(bond))
    # The release keeping eno3 only takes the bond-primary away too; the update then sets the declared one.
    assert [(action.params['params'], action.params['delete']) for action in moved.actions[:-1]] == [
        ({'type': 'bond', 'slaves': 'eno3'}, ['bond-primary']),
        ({'slaves': 'eno3 eno4', 'bond-primary': 'eno4', 'type': 'bond'}, []),
    ]
    # Ports leaving out the bond's own bond-primary: refused in mode active-backup, which uses it ...
    left_out = r'interfaces\[0\]\.ports: bond0 on pve1 has the bond-primary eno2, which these ports leave out; .*declare its bond_primary'
    with pytest.raises(NetworkRefused, match=left_out):
        plan(spec({'name': 'bond0', 'type': 'bond', 'ports': ['eno3']}), observed(bond))
    # ... and deleted in another mode, where PVE does not write it.
    other = plan(spec({'name': 'bond0', 'type': 'bond', 'ports': ['eno3'], 'bond_mode': '802.3ad'}), observed(bond))
    assert other.actions[-2].params['delete'] == ['bond-primary'] and other.actions[-2].params['params']['bond_mode'] == '802.3ad'
    # A declared bond_primary must be one of the ports, declared or the bond's own.
    with pytest.raises(NetworkRefused, match=r'interfaces\[0\]\.bond_primary: bond0 on pve1: eno4 is not one of its slaves \(eno2 eno3\)'):
        plan(spec({'name': 'bond0', 'type': 'bond', 'bond_mode': 'active-backup', 'bond_primary': 'eno4'}), observed(bond))
    with pytest.raises(NetworkOptionError, match=r'interfaces\[0\]\.bond_primary: bond0: eno4 is not one of its ports \(eno2 eno3\)'):
        spec(dict(declared, ports=['eno2', 'eno3']))


def test_prune_deletes_only_marked_interfaces():
    have = {**owned('vmbr5', type='bridge', bridge_ports=''), 'vmbr6': {'iface': 'vmbr6', 'type': 'bridge', 'comments': 'by hand\n'}}
    result = plan(spec(prune=True), observed(have))
    assert kinds(result) == [(DELETE, 'vmbr5'), (APPLY, None)]
    assert result.diff['after'] == {'vmbr5': None}
    assert plan(spec(), observed(have)).actions == ()


def test_an_unmarked_interface_is_adopted_only_when_asked():
    have = {'vmbr6': {'iface': 'vmbr6', 'type': 'bridge', 'bridge_ports': 'eno2', 'comments': 'by hand\n'}}
    with pytest.raises(NetworkRefused, match=r"interfaces\[0\]: vmbr6 exists on pve1 but was not made by this collection .*set adopt: true"):
        plan(spec({'name': 'vmbr6', 'type': 'bridge'}), observed(have))
    with pytest.raises(NetworkRefused, match='adopt'):
        plan(spec({'name': 'vmbr6', 'state': 'absent'}), observed(have))
    adopted = plan(spec({'name': 'vmbr6', 'type': 'bridge'}, adopt=True), observed(have))
    # autostart defaults to true: the installer's interfaces without an auto line get one.
    assert adopted.actions[0].params['params'] == {'type': 'bridge', 'autostart': 1, 'comments': 'by hand\npuls-managed'}


def test_the_management_interface_and_its_ports_refuse_change_unless_allowed():
    assert management_chain(INSTALLED, ADDRESS) == {
        'vmbr0': "vmbr0 carries the node's management address 127.0.0.201",
        'eno1': "eno1 is beneath vmbr0, which carries the node's management address 127.0.0.201",
    }
    declared = {'name': 'vmbr0', 'type': 'bridge', 'mtu': 9000}
    with pytest.raises(NetworkRefused, match=r"vmbr0 on pve1: vmbr0 carries the node's management address 127\.0\.0\.201 .*allow_management_change: true"):
        plan(spec(declared, adopt=True), observed())
    assert kinds(plan(spec(declared, adopt=True, allow_management_change=True), observed())) == [(UPDATE, 'vmbr0'), (APPLY, None)]
    # The node's address may be its IPv6 one (a cluster over IPv6), written in any of its forms.
    with pytest.raises(NetworkRefused, match=r"vmbr0 on pve1: vmbr0 carries the node's management address fe80:0::201"):
        plan(spec(declared, adopt=True), Observed(dict(INSTALLED, vmbr0=DUAL_STACK), None, 'fe80:0::201'))
    assert set(management_chain(dict(INSTALLED, vmbr0=DUAL_STACK), 'FE80::201')) == {'vmbr0', 'eno1'}
    # A bond beneath the management bridge is protected as well.
    bonded = observed(owned('bond0', type='bond', slaves='eno1'), vmbr0=dict(INSTALLED['vmbr0'], bridge_ports='bond0'))
    with pytest.raises(NetworkRefused, match='bond0 is beneath vmbr0'):
        plan(spec({'name': 'bond0', 'state': 'absent'}), bonded)
    # So is the bond beneath a VLAN port of it that has no stanza, so is not listed (bridge-ports bond0.100).
    tagged = observed(owned('bond0', type='bond', slaves='eno2 eno3'), vmbr0=dict(INSTALLED['vmbr0'], bridge_ports='bond0.100'))
    assert set(management_chain(tagged.interfaces, ADDRESS)) == {'vmbr0', 'bond0.100', 'bond0', 'eno2', 'eno3'}
    with pytest.raises(NetworkRefused, match="bond0 on pve1: bond0 is beneath bond0.100, which is beneath vmbr0, which carries the node's management"):
        plan(spec({'name': 'bond0', 'type': 'bond', 'ports': ['eno2']}), tagged)


def test_changes_staged_by_someone_else_are_refused_unless_applied_with_the_run():
    staged = observed(changes='+auto vmbr9\n')
    declared = {'name': 'vmbr1', 'type': 'bridge'}
    with pytest.raises(NetworkRefused, match=r'(?s)pve1 has network changes staged by someone else.*\+auto vmbr9.*pending_changes: apply'):
        plan(spec(declared), staged)
    # Nothing to do: nothing applied, nothing refused.
    assert plan(spec(), staged).actions == ()
    result = plan(spec(declared, pending_changes='apply'), staged)
    assert kinds(result) == [(CREATE, 'vmbr1'), (APPLY, None)] and result.diff['before']['(pending)'] == '+auto vmbr9\n'
    assert kinds(plan(spec(pending_changes='apply'), staged)) == [(APPLY, None)]
    assert kinds(plan(spec(declared, apply=False), staged)) == [(CREATE, 'vmbr1')]


def test_a_type_the_node_reads_differently_is_refused():
    with pytest.raises(NetworkRefused, match=r'interfaces\[0\]\.type: vmbr1 is a bridge on pve1, not a vlan'):
        plan(spec({'name': 'vmbr1', 'type': 'vlan', 'vlan_raw_device': 'eno2', 'vlan_id': 5}), observed(owned('vmbr1', type='bridge')))


@pytest.mark.parametrize(
    ('item', 'option', 'message'),
    [
        ({'name': 'v', 'type': 'bridge'}, 'interfaces[0].name', "'v' is not an interface name"),
        ({'name': 'vmbr1'}, 'interfaces[0].type', 'type is required'),
        ({'name': 'uplink', 'type': 'bond'}, 'interfaces[0].name', 'must be named bondN'),
        ({'name': 'vmbr1', 'type': 'bridge', 'cidr': '127.0.0.300/8'}, 'interfaces[0].cidr', 'not an IPv4 address with its prefix'),
        ({'name': 'vmbr1', 'type': 'bridge', 'cidr': '127.0.0.3'}, 'interfaces[0].cidr', 'lacks the prefix length'),
        # pve_verify_cidrv4: a prefix length of 8 to 32.
        ({'name': 'vmbr1', 'type': 'bridge', 'cidr': '127.0.0.3/7'}, 'interfaces[0].cidr', 'prefix length of 127.0.0.3/7 is not 8 to 32'),
        ({'name': 'vmbr1', 'type': 'bridge', 'mtu': 100}, 'interfaces[0].mtu', '1280 to 65520'),
        ({'name': 'vmbr1', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '5000'}, 'interfaces[0].vlan_ids', 'VLAN 5000 .* is 2 to 4094'),
        # pve_verify_vlan_id_or_range: VLAN 1 (the untagged default) and ranges not going up are refused.
        ({'name': 'vmbr1', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '1-100'}, 'interfaces[0].vlan_ids', "VLAN 1 in '1-100' .* is 2 to 4094"),
        ({'name': 'vmbr1', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '10 20-20'}, 'interfaces[0].vlan_ids', "range '20-20' must go from the lower"),
        ({'name': 'vmbr1', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '30-10'}, 'interfaces[0].vlan_ids', "range '30-10' must go from the lower"),
        ({'name': 'vmbr1', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '10-x'}, 'interfaces[0].vlan_ids', 'not a VLAN ID'),
        ({'name': 'vmbr1', 'type': 'bridge', 'vlan_ids': '10'}, 'interfaces[0].vlan_ids', 'need vlan_aware'),
        ({'name': 'vmbr1', 'type': 'bridge', 'bond_mode': '802.3ad'}, 'interfaces[0].bond_mode', 'for a bond, not a bridge'),
        ({'name': 'bond0', 'type': 'bond', 'bond_primary': 'eno2'}, 'interfaces[0].bond_primary', 'active-backup'),
        ({'name': 'vlan30', 'type': 'vlan'}, 'interfaces[0].vlan_raw_device', 'needs vlan_raw_device'),
        ({'name': 'vmbr0.5000', 'type': 'vlan'}, 'interfaces[0].name', '1 to 4094'),
        ({'name': 'vmbr0.5', 'type': 'vlan', 'ports': ['eno2']}, 'interfaces[0].ports', 'a VLAN has no ports'),
    ],
)
def test_bad_input_names_the_option(item, option, message):
    with pytest.raises(NetworkOptionError, match=message) as raised:
        spec(item)
    assert raised.value.option == option and str(raised.value).startswith(option + ': ')


def test_an_interface_declared_twice_is_refused():
    with pytest.raises(NetworkOptionError, match=r'interfaces\[1\]\.name: vmbr1 is declared twice \(also interfaces\[0\]\)'):
        spec({'name': 'vmbr1', 'type': 'bridge'}, {'name': 'vmbr1', 'type': 'bridge'})


def test_pve_node_network_documents_each_option_as_declared():
    """The module's documentation parses as YAML (a ': ' in a plain scalar does not) and matches its argument spec."""
    documented = yaml.safe_load(pve_node_network.DOCUMENTATION)['options']
    yaml.safe_load(pve_node_network.EXAMPLES)
    yaml.safe_load(pve_node_network.RETURN)
    assert list(documented) == list(pve_node_network.ARGUMENT_SPEC)
    for name, option in pve_node_network.ARGUMENT_SPEC.items():
        for key in ('type', 'elements', 'choices', 'default', 'required'):
            assert documented[name].get(key) == option.get(key), (name, key)
        for sub, sub_spec in (option.get('options') or {}).items():
            for key in ('type', 'elements', 'choices', 'default'):
                assert documented[name]['suboptions'][sub].get(key) == sub_spec.get(key), (name, sub, key)
