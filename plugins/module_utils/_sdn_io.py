# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_sdn's run: read the SDN zones, VNets and subnets (with pending=1), plan, check privileges, act.

Everything that can be refused is refused before the first write: the options (``_sdn_plan.check_options``), a VNet
this collection did not make, a VNet a guest's NIC uses (every guest's config is read when the plan deletes a VNet:
PVE itself does not check, pve-network ``PVE/API2/Network/SDN/Vnets.pm`` delete), PVE's own rules the plan knows,
changes someone else left unapplied, missing privileges. A real run then writes each change
(``/cluster/sdn/zones``, ``/cluster/sdn/vnets``, ``/cluster/sdn/vnets/{vnet}/subnets``) and applies them all with one
``PUT /cluster/sdn`` (``PVE/API2/Network/SDN.pm`` reload: the task ``reloadnetworkall``), only when something changed.
"""

from __future__ import annotations

import re

from ansible_collections.puls.proxmox.plugins.module_utils import _sdn_plan
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import require, sdn_needs

# Reloading the network of every node takes seconds each.
APPLY_TIMEOUT = 300
_NET_KEY = re.compile(r'net\d+$')


def reconcile(client, params, check_mode=False):
    """Converge the declared SDN objects; returns the module result."""
    spec = _sdn_plan.check_options(params)
    observed = read(client)
    doomed = _sdn_plan.vnets_to_delete(spec, observed)
    if doomed:
        observed = _sdn_plan.Observed(observed.zones, observed.vnets, observed.subnets, guests_using(client, doomed))
    plan = _sdn_plan.plan(spec, observed)
    zone_of = {name: str(config.get('zone')) for name, config in ((n, _sdn_plan.config_of(e)) for n, e in observed.vnets.items()) if config}
    zone_of.update({item.name: str(item.settings['zone']) for item in spec.vnets if item.state == 'present'})
    require(client, sdn_needs(plan.actions, zone_of, bool(doomed)), 'the plan for the SDN config')
    applied = False
    if plan.changed and not check_mode:
        applied = execute(client, plan)
    return {
        'changed': plan.changed,
        'diff': plan.diff,
        'changes': list(plan.changes),
        'actions': [_describe(action) for action in plan.actions],
        'applied': applied,
    }


def read(client):
    """The zones, VNets and subnets as listed with pending=1 (each VNet's subnets; none of a VNet the config lost)."""
    zones = client.get('/cluster/sdn/zones', pending=1, context='listing the SDN zones') or []
    vnets = client.get('/cluster/sdn/vnets', pending=1, context='listing the SDN VNets') or []
    subnets = {}
    for entry in vnets:
        if entry.get('state') == 'deleted':
            continue
        vnet = entry['vnet']
        for subnet in client.get(f'/cluster/sdn/vnets/{vnet}/subnets', pending=1, context=f'listing the subnets of VNet {vnet}') or []:
            subnets[(vnet, str(subnet.get('cidr')))] = subnet
    return _sdn_plan.Observed({item['zone']: item for item in zones}, {item['vnet']: item for item in vnets}, subnets)


def guests_using(client, vnets):
    """VNet -> the guests (``qemu 101 on pve1``) with a NIC on it, for the VNets given; every guest's config is read."""
    wanted = set(vnets)
    users = {}
    for guest in sorted(client.cluster_vms() or [], key=lambda item: int(item.get('vmid') or 0)):
        config = client.vm_config(guest['node'], guest['vmid'], guest_type=guest.get('type') or 'qemu') or {}
        for key, value in sorted(config.items()):
            if not _NET_KEY.match(key):
                continue
            props = dict(part.split('=', 1) for part in str(value).split(',') if '=' in part)
            if props.get('bridge') in wanted:
                users.setdefault(props['bridge'], []).append(f'{guest.get("type") or "qemu"} {guest["vmid"]} on {guest["node"]} ({key})')
    return users


def execute(client, plan):
    """Write the plan's changes and apply them; returns whether the SDN config was applied."""
    for action in plan.actions:
        params = action.params
        what = f'{params.get("kind")} {params.get("id")}'
        if action.kind == _sdn_plan.CREATE:
            client.post(params['path'], context=f'creating SDN {what}', **params['params'])
        elif action.kind == _sdn_plan.UPDATE:
            client.put(params['path'], delete=','.join(params['delete']) or None, idempotent=True, context=f'updating SDN {what}', **params['params'])
        elif action.kind == _sdn_plan.DELETE:
            client.delete(params['path'], idempotent=True, context=f'deleting SDN {what}')
        elif action.kind == _sdn_plan.APPLY:
            client.run_task('PUT', '/cluster/sdn', idempotent=True, task_timeout=APPLY_TIMEOUT, context='applying the SDN config')
            return True
    return False


def _describe(action):
    if action.kind == _sdn_plan.APPLY:
        return 'apply' + (' (with the changes made before)' if action.params.get('pending') else '')
    return f'{action.kind} {action.params["kind"]} {action.params["id"]}'
