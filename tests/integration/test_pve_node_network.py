# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_node_network through real ansible-playbook runs against the lab: the four-run pattern with one apply, prune of
only what it made, refusals that change nothing (bad input, an unowned or the management interface, missing
privileges, changes someone else staged), and the module's EXAMPLES.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_node_network.py -p no:xdist
"""

from __future__ import annotations

import re

import pytest
import yaml
from integration import lab_vms
from integration.playbooks import four_runs, run_playbook
from lab.pve.network import PHYSICAL_NICS, parse

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._network_io import reconcile
from ansible_collections.puls.proxmox.plugins.modules import pve_node_network

NET = '/nodes/pve1/network'


def play(*tasks):
    return [{'name': 'Node network', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': list(tasks)}]


def network_task(name, **options):
    return {'name': name, 'puls.proxmox.pve_node_network': dict({'node': 'pve1'}, **options)}


def reloads(lab, node='pve1'):
    """How many times the node's network was applied (srvreload tasks of `networking`)."""
    return lab.call(lambda: sum(1 for task in lab.pve.tasks.values() if task['type'] == 'srvreload' and task['node'] == node))


def files(lab, node='pve1'):
    return lab.call(lambda: lab.pve.network_files(node))


def interfaces(lab, node='pve1'):
    """The node's staged-or-current interfaces, read through the lab's own parse (not the module's code)."""
    current, staged = files(lab, node)
    return parse(staged if staged is not None else current, PHYSICAL_NICS)['ifaces']


def test_four_runs_apply_once_and_prune_deletes_only_what_it_made(lab, tmp_path):
    declared = [
        {'name': 'bond0', 'type': 'bond', 'ports': ['eno2', 'eno3'], 'bond_mode': 'active-backup', 'bond_primary': 'eno2'},
        {'name': 'vmbr1', 'type': 'bridge', 'ports': ['bond0'], 'vlan_aware': True, 'vlan_ids': '10 20-30', 'comments': 'Guests'},
        {'name': 'vmbr1.30', 'type': 'vlan', 'cidr': lab.address(1) + '/24', 'mtu': 1400},
    ]
    runs = four_runs(tmp_path, play(network_task('Declare', interfaces=declared)), lab.env)

    check, real = runs.check.one('Declare'), runs.real.one('Declare')
    assert check['actions'] == real['actions'] == ['create bond0', 'create vmbr1', 'create vmbr1.30', 'apply']
    assert (check['applied'], real['applied']) == (False, True) and real['management'] == ['eno1', 'vmbr0']
    assert real['diff']['before'] == {'bond0': None, 'vmbr1': None, 'vmbr1.30': None}
    # One reload for the whole run, none in check mode or when nothing changed; nothing left staged.
    assert reloads(lab) == 1 and files(lab)[1] is None
    have = interfaces(lab)
    assert (have['bond0']['slaves'], have['bond0']['bond_mode'], have['bond0']['bond-primary']) == ('eno2 eno3', 'active-backup', 'eno2')
    assert (have['vmbr1']['bridge_ports'], have['vmbr1']['bridge_vids'], have['vmbr1']['comments']) == ('bond0', '10 20-30', 'Guests\npuls-managed\n')
    assert (have['vmbr1.30']['cidr'], have['vmbr1.30']['mtu'], have['vmbr1.30']['method']) == (lab.address(1) + '/24', '1400', 'static')

    # A bridge made by hand is never pruned; the bond and the VLAN this module made are, and vmbr1 takes eno2 itself.
    api = lab_vms.client(lab)
    api.post(NET, iface='vmbr7', type='bridge', comments='by hand')
    api.run_task('PUT', NET)
    pruned = run_playbook(tmp_path, play(network_task('Prune', prune=True, interfaces=[{'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno2']}])), lab.env)
    assert pruned.rc == 0, pruned.stdout
    assert pruned.one('Prune')['actions'] == [
        'update vmbr1 (release the ports it no longer has)',
        'delete vmbr1.30',
        'delete bond0',
        'update vmbr1',
        'apply',
    ]
    have = interfaces(lab)
    assert 'bond0' not in have and 'vmbr1.30' not in have and have['vmbr1']['bridge_ports'] == 'eno2' and 'vmbr7' in have
    assert reloads(lab) == 3


def test_refusals_change_nothing_and_changes_staged_by_someone_else_are_applied_only_when_asked(lab, tmp_path):
    api = lab_vms.client(lab)
    lab.call(lambda: lab.pve.add_api_token('carol@pve', 'audit', 'audit-secret', {'/': ['Sys.Audit'], '/sdn/zones/localnetwork': ['SDN.Audit']}))
    api.post(NET, iface='vmbr7', type='bridge', comments='by hand')
    api.run_task('PUT', NET)
    # Someone stages a bridge in the web interface.
    api.post(NET, iface='vmbr8', type='bridge', comments='staged by hand')
    declared = [{'name': 'vmbr2', 'type': 'bridge', 'ports': ['eno3']}]
    refused = [
        network_task('Bad MTU', interfaces=[{'name': 'vmbr2', 'type': 'bridge', 'mtu': 100}]),
        network_task('Bad address', interfaces=[{'name': 'vmbr2', 'type': 'bridge', 'cidr': '127.0.0.300/8'}]),
        network_task('VLAN 1', interfaces=[{'name': 'vmbr2', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '1-100'}]),
        network_task('Range down', interfaces=[{'name': 'vmbr2', 'type': 'bridge', 'vlan_aware': True, 'vlan_ids': '20 30-30'}]),
        network_task('Hand-made', interfaces=[{'name': 'vmbr7', 'type': 'bridge', 'mtu': 1400}]),
        network_task('Management', adopt=True, pending_changes='apply', interfaces=[{'name': 'vmbr0', 'type': 'bridge', 'mtu': 1400}]),
        network_task(
            'Without Sys.Modify', api_user='carol@pve', api_token_name='audit', api_token_secret='audit-secret', pending_changes='apply', interfaces=declared
        ),
        network_task('Staged', interfaces=declared),
    ]
    tasks = [dict(task, ignore_errors=True) for task in refused] + [network_task('Apply both', pending_changes='apply', interfaces=declared)]
    run = run_playbook(tmp_path, play(*tasks), lab.env, name='refused')
    assert run.rc == 0, run.stdout
    assert [record['status'] for record in run.results] == ['failed'] * len(refused) + ['ok']
    messages = {task['name']: run.one(task['name']).get('msg', '') for task in refused}
    assert messages['Bad MTU'].startswith('interfaces[0].mtu: vmbr2: 100 is not an MTU PVE takes (1280 to 65520)')
    assert run.one('Bad MTU')['option'] == 'interfaces[0].mtu'
    assert messages['Bad address'].startswith('interfaces[0].cidr: vmbr2:')
    # pve_verify_vlan_id_or_range, before anything is written: VLAN 1 and a range not going up.
    assert messages['VLAN 1'].startswith("interfaces[0].vlan_ids: vmbr2: VLAN 1 in '1-100' is not one PVE takes on a bridge")
    assert messages['Range down'].startswith("interfaces[0].vlan_ids: vmbr2: the range '30-30' must go from the lower to the higher")
    assert run.one('VLAN 1')['option'] == run.one('Range down')['option'] == 'interfaces[0].vlan_ids'
    assert 'vmbr7 exists on pve1 but was not made by this collection' in messages['Hand-made'] and 'adopt: true' in messages['Hand-made']
    assert f"vmbr0 carries the node's management address {lab.block.node(1)}" in messages['Management']
    assert 'allow_management_change: true' in messages['Management']
    assert 'Permission check failed (/nodes/pve1, Sys.Modify) to change and apply the network of pve1' in messages['Without Sys.Modify']
    # A run that would apply refuses while changes someone else staged wait, showing them, until told to apply them.
    assert 'pve1 has network changes staged by someone else' in messages['Staged'] and '+iface vmbr8 inet manual' in messages['Staged']
    assert 'pending_changes: apply' in messages['Staged']
    assert run.one('Apply both')['actions'] == ['create vmbr2', 'apply (with the changes staged before)']
    # Nothing refused was written: one reload by hand, one by the last task; vmbr7 and vmbr0 as they were.
    have = interfaces(lab)
    assert files(lab)[1] is None and {'vmbr2', 'vmbr8'} <= set(have) and reloads(lab) == 2
    assert 'mtu' not in have['vmbr7'] and 'mtu' not in have['vmbr0'] and 'comments' not in have['vmbr0']


def test_the_examples_run_as_documented(lab, tmp_path):
    """The EXAMPLES as written, but for their documentation address, which becomes one of the lab's."""
    text = pve_node_network.EXAMPLES.replace('127.51.100.10/24', lab.address(2) + '/24')
    run = run_playbook(tmp_path, play(*yaml.safe_load(text)), lab.env, name='examples')
    assert run.rc == 0, run.stdout
    assert run.one('Show what was done')['msg'] == ['create bond0', 'create vmbr1', 'create vmbr1.30', 'apply']
    have = interfaces(lab)
    assert 'bond0' not in have and 'vmbr1.30' not in have and have['vmbr1']['bridge_ports'] == 'eno2'
    assert have['vmbr0']['comments'] == 'Management\npuls-managed\n' and have['vmbr0']['cidr'] == lab.block.node(1) + '/24'
    # The adoption's update sent the IPv6 address again, so PVE kept it.
    assert (have['vmbr0']['cidr6'], have['vmbr0']['gateway6'], have['vmbr0']['families']) == ('fe80::201/64', 'fe80::1', ['inet', 'inet6'])
    assert reloads(lab) == 3


def test_a_change_pve_refuses_midway_reverts_what_the_run_staged(lab):
    """Straight through the module's reconcile (no playbook): the bond is staged, PVE refuses the bridge's MTU above its
    port's (Interfaces.pm $check_mtu), and the run reverts the bond instead of leaving it staged."""
    declared = [
        {'name': 'bond0', 'type': 'bond', 'ports': ['eno2'], 'autostart': True},
        {'name': 'vmbr1', 'type': 'bridge', 'ports': ['eno3'], 'mtu': 9000, 'autostart': True},
    ]
    with pytest.raises(PveApiError, match=r"mtu 1500 is lower than 'vmbr1' - mtu 9000.*the changes this run had staged on pve1 were reverted"):
        reconcile(lab_vms.client(lab), {'node': 'pve1', 'interfaces': declared})
    assert files(lab)[1] is None and reloads(lab) == 0


def test_the_management_guard_knows_an_ipv6_node_address(lab, tmp_path):
    """A cluster over IPv6: the node's address in /cluster/status is vmbr0's IPv6 one (pve-cluster remote_node_ip)."""
    lab.call(lambda: lab.pve.node_ips.update(pve1='fe80:0:0::201'))
    declared = [{'name': 'vmbr0', 'type': 'bridge', 'mtu': 1400}]
    run = run_playbook(tmp_path, play(dict(network_task('Management', adopt=True, interfaces=declared), ignore_errors=True)), lab.env)
    assert run.rc == 0, run.stdout
    result = run.one('Management')
    assert [record['status'] for record in run.results] == ['failed'] and "vmbr0 carries the node's management address fe80:0:0::201" in result['msg'], result
    assert 'allow_management_change: true' in result['msg'] and files(lab)[1] is None and reloads(lab) == 0
    allowed = run_playbook(tmp_path, play(network_task('Allowed', adopt=True, allow_management_change=True, interfaces=declared)), lab.env, name='allowed')
    assert allowed.rc == 0, allowed.stdout
    assert allowed.one('Allowed')['management'] == ['eno1', 'vmbr0']
    assert (interfaces(lab)['vmbr0']['mtu'], interfaces(lab)['vmbr0']['cidr6']) == ('1400', 'fe80::201/64')


def test_a_node_without_ifupdown2_gets_nothing_staged_and_is_told_what_to_do(lab, tmp_path):
    """PVE refuses the reload before its task (assert_ifupdown2_installed): the run reverts what it staged, so the next
    run meets the same refusal rather than its own changes as someone else's."""
    lab.call(lambda: lab.pve.nodes_without_ifupdown2.add('pve1'))
    declared = [{'name': 'vmbr2', 'type': 'bridge', 'ports': ['eno3']}]
    for name in ('First', 'Second'):
        run = run_playbook(tmp_path, play(dict(network_task(name, interfaces=declared), ignore_errors=True)), lab.env, name=name)
        assert run.rc == 0, run.stdout
        message = run.one(name)['msg']
        assert 'you need ifupdown2 to reload network configuration' in message, message
        assert 'the changes this run had staged on pve1 were reverted' in message and 'install it on pve1 (apt install ifupdown2)' in message
        assert 'set apply: false' in message and files(lab)[1] is None
    # Staged only, as told: the next boot would apply it.
    staged = run_playbook(tmp_path, play(network_task('Stage', apply=False, interfaces=declared)), lab.env, name='stage')
    assert staged.rc == 0, staged.stdout
    assert staged.one('Stage')['actions'] == ['create vmbr2'] and 'vmbr2' in interfaces(lab) and reloads(lab) == 0


def test_an_update_that_would_drop_the_options_of_a_stanza_without_an_address_is_refused(lab, tmp_path):
    """An IPv6-only bridge whose inet stanza has no address but options: PVE's update would write it IPv6-only."""
    current = files(lab)[0]
    current = current.replace('iface vmbr10 inet dhcp\n', 'iface vmbr10 inet manual\n\tpost-up ip link set eno4 up\n')
    current = current.replace('iface vmbr10 inet6 auto\n', 'iface vmbr10 inet6 static\n\taddress fe80::10/64\n')
    lab.call(lambda: lab.pve.node_networks['pve1'].update(current=current))
    declared = [{'name': 'vmbr10', 'type': 'bridge', 'mtu': 1500}]
    run = run_playbook(tmp_path, play(dict(network_task('Options', adopt=True, interfaces=declared), ignore_errors=True)), lab.env)
    assert run.rc == 0, run.stdout
    message = run.one('Options')['msg']
    assert message.startswith(
        "interfaces[0]: vmbr10 on pve1 has an IPv4 stanza (inet manual) with no address but the options 'post-up ip link set eno4 up'; "
        'PVE would drop that stanza with them.'
    ), message
    assert files(lab) == (current, None)
    # The same options in a stanza without a family (ifupdown2's `iface vmbr10`) with an IPv6 address only.
    stanzas = re.search(r'iface vmbr10 inet manual\n.*?\n\n', current, re.DOTALL).group(0) + 'iface vmbr10 inet6 static\n\taddress fe80::10/64\n\n'
    assert stanzas in current, current
    bridge = '\tbridge-ports eno4\n\tbridge-stp off\n\tbridge-fd 0\n'
    typeless = current.replace(stanzas, f'iface vmbr10\n\taddress fe80::10/64\n{bridge}\tpost-up ip link set eno4 up\n\n')
    lab.call(lambda: lab.pve.node_networks['pve1'].update(current=typeless))
    run = run_playbook(tmp_path, play(dict(network_task('Typeless', adopt=True, interfaces=declared), ignore_errors=True)), lab.env, name='typeless')
    assert run.rc == 0, run.stdout
    message = run.one('Typeless').get('msg', '')
    assert message.startswith(
        "interfaces[0]: vmbr10 on pve1 has a stanza without a family, with an IPv6 address only and the options 'post-up ip link set eno4 up'"
    ), run.one('Typeless')
    assert files(lab) == (typeless, None)
    # An IPv6 gateway in an inet6 stanza without an address, which PVE writes only in that stanza.
    routed = current.replace('iface vmbr10 inet6 static\n\taddress fe80::10/64\n', 'iface vmbr10 inet6 static\n\tgateway fe80::10\n')
    routed = routed.replace('iface vmbr10 inet manual\n\tpost-up ip link set eno4 up\n', 'iface vmbr10 inet manual\n')
    lab.call(lambda: lab.pve.node_networks['pve1'].update(current=routed))
    run = run_playbook(tmp_path, play(dict(network_task('Gateway', adopt=True, interfaces=declared), ignore_errors=True)), lab.env, name='gateway')
    assert run.rc == 0, run.stdout
    message = run.one('Gateway').get('msg', '')
    assert message.startswith("interfaces[0]: vmbr10 on pve1 has an IPv6 stanza (inet6 static) with no address but the options 'gateway fe80::10'"), message
    assert files(lab) == (routed, None)


def test_an_address_written_on_the_node_that_pve_refuses_to_be_sent_again_is_refused_before_any_write(lab, tmp_path):
    """vmbr10 with a hand-written site-local IPv6 address (RESERVED to Net::IP): an update must send it again to keep
    it, and check_ipv6_settings refuses it. The check run says so, and the real run writes nothing, not even the bridge
    declared before it."""
    current = files(lab)[0].replace('iface vmbr10 inet6 auto\n', 'iface vmbr10 inet6 static\n\taddress fec0::5/64\n#puls-managed\n')
    current = current.replace('iface vmbr10 inet dhcp\n', 'iface vmbr10 inet manual\n')
    lab.call(lambda: lab.pve.node_networks['pve1'].update(current=current))
    declared = [{'name': 'vmbr2', 'type': 'bridge', 'ports': ['eno3']}, {'name': 'vmbr10', 'type': 'bridge', 'mtu': 1400}]
    task = dict(network_task('Reserved', interfaces=declared), ignore_errors=True)
    for check in (True, False):
        run = run_playbook(tmp_path, play(task), lab.env, check=check, name=f'reserved-{check}')
        assert run.rc == 0, run.stdout
        message = run.one('Reserved')['msg']
        assert [record['status'] for record in run.results] == ['failed'], message
        assert message.startswith(
            'interfaces[1]: vmbr10 on pve1 has the IPv6 address fec0::5/64, written on the node, which an update must send again to keep it, '
            'and PVE refuses it: fec0::5 is outside the global (2000::/3), unique-local (fc00::/7) and link-local (fe80::/10) unicast ranges'
        ), message
    assert lab.writes() == [] and files(lab) == (current, None)


def test_a_bond_moves_its_bond_primary_to_another_port(lab, tmp_path):
    """PVE refuses every write that leaves a bond's bond-primary outside its slaves (Interfaces.pm, check bond): the
    release of eno2 takes the bond-primary away with it, and ports that leave it out undeclared are refused up front."""
    bond = {'name': 'bond0', 'type': 'bond', 'ports': ['eno2', 'eno3'], 'bond_mode': 'active-backup', 'bond_primary': 'eno2'}
    made = run_playbook(tmp_path, play(network_task('Bond', interfaces=[bond])), lab.env, name='bond')
    assert made.rc == 0, made.stdout
    writes = len(lab.writes())
    left_out = dict(network_task('Left out', interfaces=[dict(bond, ports=['eno3'], bond_primary=None)]), ignore_errors=True)
    refused = run_playbook(tmp_path, play(left_out), lab.env, check=True, name='left-out')
    assert refused.rc == 0, refused.stdout
    message = refused.one('Left out').get('msg', '')
    assert message.startswith('interfaces[0].ports: bond0 on pve1 has the bond-primary eno2, which these ports leave out'), refused.one('Left out')
    assert len(lab.writes()) == writes
    moved = four_runs(tmp_path, play(network_task('Move', interfaces=[dict(bond, ports=['eno3'], bond_primary='eno3')])), lab.env)
    assert moved.real.one('Move')['actions'] == ['update bond0 (release the ports it no longer has)', 'update bond0', 'apply']
    have = interfaces(lab)['bond0']
    assert (have['slaves'], have['bond-primary'], files(lab)[1]) == ('eno3', 'eno3', None)


def test_a_port_or_the_default_gateway_vmbr0_keeps_is_refused_before_any_write(lab, tmp_path):
    """PVE refuses a port another interface has and a second default gateway (check_duplicate_ports,
    check_duplicate_gateway); the check run says so too, rather than the real run failing after the first write."""
    declared = [
        {'name': 'vmbr2', 'type': 'bridge', 'ports': ['eno3']},
        {'name': 'vmbr3', 'type': 'bridge', 'ports': ['eno1']},
        {'name': 'vmbr2.40', 'type': 'vlan', 'cidr': lab.address(3) + '/24', 'gateway': lab.address(4)},
    ]
    task = dict(network_task('Taken', interfaces=declared), ignore_errors=True)
    for check in (True, False):
        run = run_playbook(tmp_path, play(task), lab.env, check=check, name=f'taken-{check}')
        assert run.rc == 0, run.stdout
        message = run.one('Taken').get('msg', '')
        assert message.startswith('interfaces[1].ports: vmbr3 on pve1: eno1 is a port of vmbr0 too; a port is on one interface only'), run.one('Taken')
        assert 'interfaces[2].gateway: vmbr2.40 on pve1: vmbr0 has the default gateway; a node has one only' in message
    assert lab.writes() == [] and files(lab)[1] is None


def test_the_management_guard_follows_a_vlan_port_that_has_no_stanza_down_to_its_bond(lab, tmp_path):
    """The node's address on vmbr20, whose port bond0.100 has no stanza, so the index does not list it: bond0 beneath
    it is the management path all the same."""
    bridge = '\tbridge-stp off\n\tbridge-fd 0\n'
    extra = (
        'auto bond0\niface bond0 inet manual\n\tbond-slaves eno2 eno3\n\tbond-miimon 100\n\tbond-mode balance-rr\n#puls-managed\n\n'
        f'auto vmbr20\niface vmbr20 inet static\n\taddress {lab.address(6)}/24\n\tbridge-ports bond0.100\n{bridge}\n'
    )
    current = files(lab)[0] + extra
    lab.call(lambda: lab.pve.node_networks['pve1'].update(current=current))
    lab.call(lambda: lab.pve.node_ips.update(pve1=lab.address(6)))
    assert 'bond0.100' not in interfaces(lab)
    declared = [{'name': 'bond0', 'type': 'bond', 'ports': ['eno2']}]
    run = run_playbook(tmp_path, play(dict(network_task('Management', interfaces=declared), ignore_errors=True)), lab.env)
    assert run.rc == 0, run.stdout
    message = run.one('Management').get('msg', '')
    assert message.startswith(
        f"bond0 on pve1: bond0 is beneath bond0.100, which is beneath vmbr20, which carries the node's management address {lab.address(6)}"
    ), run.one('Management')
    assert 'allow_management_change: true' in message and lab.writes() == []


def test_a_failed_reload_says_what_is_left_staged(lab, tmp_path):
    """A reload task that fails had moved interfaces.new over interfaces first (reload_network_config's worker): nothing
    is left staged and the next run changes nothing, which the error says. A reload PVE refuses while changes staged
    before the run are applied with it: the run's own stay staged with them, not reverted, which the error says too."""
    lab.call(lambda: lab.pve.network_reload_failures.update(pve1="command 'ifreload -a' failed: exit code 1"))
    declared = [{'name': 'vmbr2', 'type': 'bridge', 'ports': ['eno3']}]
    run = run_playbook(tmp_path, play(dict(network_task('Reload', interfaces=declared), ignore_errors=True)), lab.env, name='reload')
    assert run.rc == 0, run.stdout
    message = run.one('Reload').get('msg', '')
    assert "ended with: command 'ifreload -a' failed: exit code 1" in message, run.one('Reload')
    assert 'so nothing is left staged and the next run finds nothing to change' in message and 'ifreload -a)' in message
    assert files(lab)[1] is None and 'vmbr2' in interfaces(lab)
    lab.call(lab.pve.network_reload_failures.clear)
    lab.call(lambda: lab.pve.nodes_without_ifupdown2.add('pve1'))
    lab_vms.client(lab).post(NET, iface='vmbr8', type='bridge', comments='staged by hand')
    declared = [{'name': 'vmbr3', 'type': 'bridge', 'ports': ['eno2']}]
    task = network_task('Pending', pending_changes='apply', interfaces=declared)
    run = run_playbook(tmp_path, play(dict(task, ignore_errors=True)), lab.env, name='pending')
    assert run.rc == 0, run.stdout
    message = run.one('Pending').get('msg', '')
    assert message.startswith('applying the network of pve1 failed (HTTP 500): you need ifupdown2 to reload network configuration'), run.one('Pending')
    assert 'the changes this run staged on pve1 are left staged with those staged before it' in message and 'apt install ifupdown2' in message
    assert {'vmbr3', 'vmbr8'} <= set(interfaces(lab)) and files(lab)[1] is not None
