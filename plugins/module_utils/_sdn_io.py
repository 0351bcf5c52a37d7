# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_sdn's run: read the SDN zones, VNets and subnets (with pending=1) and what else an apply takes along, plan,
check privileges, act.

Everything that can be refused is refused before the first write: the options (``_sdn_plan.check_options``), a VNet
this collection did not make, a VNet a guest's NIC uses (every guest's config is read when the plan deletes a VNet:
PVE itself does not check, pve-network ``PVE/API2/Network/SDN/Vnets.pm`` delete), PVE's own rules the plan knows,
changes someone else left unapplied (SDN objects, controllers and fabrics, and each node's staged network changes,
which the apply's reload applies), missing privileges. A real run then takes PVE 9's SDN lock (``_sdn_lock``), reads
and plans again under it, writes each change (``/cluster/sdn/zones``, ``/cluster/sdn/vnets``,
``/cluster/sdn/vnets/{vnet}/subnets``) with the lock's token and applies them all with one ``PUT /cluster/sdn``
(``PVE/API2/Network/SDN.pm`` reload: the task ``reloadnetworkall``), only when something changed. A write PVE refuses
midway leaves nothing behind where PVE can roll back (``_sdn_lock.rollback``); the apply fails when a node's network
was not reloaded (``_sdn_reload``).
"""

from __future__ import annotations

import dataclasses
import re

from ansible_collections.puls.proxmox.plugins.module_utils import _sdn_lock, _sdn_plan, _sdn_reload
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import require, sdn_needs

# Reloading the network of every node takes seconds each.
APPLY_TIMEOUT = 300
_NET_KEY = re.compile(r'net\d+$')


def reconcile(client, params, check_mode=False):
    """Converge the declared SDN objects; returns the module result."""
    spec = _sdn_plan.check_options(params)
    observed, plan = observe_and_plan(client, spec)
    zone_of = {name: str(config.get('zone')) for name, config in ((n, _sdn_plan.config_of(e)) for n, e in observed.vnets.items()) if config}
    zone_of.update({item.name: str(item.settings['zone']) for item in spec.vnets if item.state == 'present'})
    deletes = any(action.kind == _sdn_plan.DELETE and action.params['kind'] == 'vnet' for action in plan.actions)
    require(client, sdn_needs(plan.actions, zone_of, deletes, observed.nodes, observed.fabrics), 'the plan for the SDN config')
    applied = False
    if plan.changed and not check_mode:
        plan, applied = locked_run(client, spec, observed, plan)
    return {
        'changed': plan.changed,
        'diff': plan.diff,
        'changes': list(plan.changes),
        'actions': [_describe(action) for action in plan.actions],
        'applied': applied,
    }


def observe_and_plan(client, spec):
    """(what PVE shows, the plan of spec against it); SdnRefused for a plan the module will not carry out."""
    observed = read(client)
    doomed = _sdn_plan.vnets_to_delete(spec, observed)
    if doomed:
        observed = dataclasses.replace(observed, users=guests_using(client, doomed))
    return observed, _sdn_plan.plan(spec, observed)


def locked_run(client, spec, observed, plan):
    """Under PVE 9's SDN lock, plan again (what is written is what PVE has now) and execute; (the plan, applied)."""
    token = _sdn_lock.acquire(client, allow_pending=bool(_apply_params(plan).get('pending')))
    if token is None:
        return plan, execute(client, plan, None, observed.nodes)
    try:
        observed, plan = observe_and_plan(client, spec)
    except BaseException:
        _sdn_lock.release(client, token)
        raise
    if not plan.changed:
        _sdn_lock.release(client, token)
        return plan, False
    return plan, execute(client, plan, token, observed.nodes)


def read(client):
    """The zones, VNets and subnets as listed with pending=1 (each VNet's subnets; none of a VNet the config lost), and
    what else an apply would commit or apply (controllers, fabrics, the nodes' staged network changes)."""
    zones = client.get('/cluster/sdn/zones', pending=1, context='listing the SDN zones') or []
    vnets = client.get('/cluster/sdn/vnets', pending=1, context='listing the SDN VNets') or []
    subnets = {}
    for entry in vnets:
        if entry.get('state') == 'deleted':
            continue
        vnet = entry['vnet']
        for subnet in client.get(f'/cluster/sdn/vnets/{vnet}/subnets', pending=1, context=f'listing the subnets of VNet {vnet}') or []:
            subnets[(vnet, str(subnet.get('cidr')))] = subnet
    controllers = client.get('/cluster/sdn/controllers', pending=1, context='listing the SDN controllers') or []
    elsewhere = [text for text in (_sdn_plan.pending_of('controller', item.get('controller'), item) for item in controllers) if text]
    fabrics = _fabrics(client)
    if fabrics is not None:
        elsewhere += [text for text in (_sdn_plan.pending_of('fabric', _key(item, 'id'), item) for item in fabrics.get('fabrics') or ()) if text]
        elsewhere += [
            text
            for text in (_sdn_plan.pending_of('fabric node', f'{_key(item, "fabric_id")} {_key(item, "node_id")}', item) for item in fabrics.get('nodes') or ())
            if text
        ]
    nodes = sorted(item['node'] for item in client.get('/nodes', context='listing the nodes of the cluster') or () if item.get('status') == 'online')
    return _sdn_plan.Observed(
        {item['zone']: item for item in zones},
        {item['vnet']: item for item in vnets},
        subnets,
        elsewhere=sorted(elsewhere),
        staged=[f'node {node} network (staged)' for node in nodes if _staged(client, node)],
        nodes=nodes,
        fabrics=fabrics is not None,
    )


def _fabrics(client):
    """``GET /cluster/sdn/fabrics/all`` with pending=1 (pve-network ``PVE/API2/Network/SDN/Fabrics.pm`` list_all), or
    None on a PVE without fabrics (8: the route answers 501)."""
    try:
        return client.get('/cluster/sdn/fabrics/all', pending=1, context='listing the SDN fabrics') or {}
    except PveApiError as exc:
        if exc.status == 501:
            return None
        raise


def _key(entry, key):
    """A key of a pending-view entry: pending_config (pve-network SDN.pm) keeps only ``type`` and ``vnet`` top-level for
    an object the running config lacks, so a new fabric's ``id`` (a new fabric node's ``fabric_id``, ``node_id``) is in
    its ``pending``, as Fabrics.pm list_all itself reads it."""
    return entry.get(key) or (entry.get('pending') or {}).get(key)


def _staged(client, node):
    """Whether node has network changes staged (pve-manager ``PVE/API2/Network.pm`` index: ``changes``, the diff of
    /etc/network/interfaces.new). Without Sys.Audit on /nodes/NODE it cannot be read: the privilege check names it."""
    try:
        answer = client.get_answer(f'/nodes/{node}/network', context=f'listing the network devices of {node}') or {}
    except PveApiError as exc:
        if exc.status == 403:
            return False
        raise
    return bool(answer.get('changes'))


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


def execute(client, plan, token, nodes):
    """Write the plan's changes with the lock's token (None without a lock) and apply them; returns whether the SDN
    config was applied. A refused write undoes this run's earlier ones where it can, and says which are left."""
    lock = {'lock-token': token} if token else {}
    written = []
    applied = None
    for action in plan.actions:
        params = action.params
        what = f'{params.get("kind")} {params.get("id")}'
        try:
            if action.kind == _sdn_plan.CREATE:
                client.post(params['path'], context=f'creating SDN {what}', **params['params'], **lock)
            elif action.kind == _sdn_plan.UPDATE:
                delete = ','.join(params['delete']) or None
                client.put(params['path'], delete=delete, idempotent=True, context=f'updating SDN {what}', **params['params'], **lock)
            elif action.kind == _sdn_plan.DELETE:
                client.delete(params['path'], idempotent=True, context=f'deleting SDN {what}', **lock)
            elif action.kind == _sdn_plan.APPLY:
                applied = client.run_task('PUT', '/cluster/sdn', idempotent=True, task_timeout=APPLY_TIMEOUT, context='applying the SDN config', **lock)
        except PveApiError as exc:
            if action.kind == _sdn_plan.APPLY and exc.upid:
                raise  # committed: its task failed (no quorum), nothing to undo
            raise _undone(client, exc, written, token, not _apply_params(plan).get('sdn_pending')) from None
        except BaseException:
            # PVE's lock never expires: a run stopped by anything else must not leave it held.
            _sdn_lock.release_quietly(client, token)
            raise
        written.append(_describe(action))
    if applied is not None:
        # Committed, and the apply released the lock: what follows undoes nothing.
        _check_reloads(client, applied.upid, nodes)
        return True
    _sdn_lock.release(client, token)
    return False


def _undone(client, exc, written, token, can_roll_back):
    """The error of a refused write or apply, after undoing this run's earlier writes where PVE can: with the lock
    and no changes of others pending, the rollback restores the config as it was; else the lock is released and the
    writes left pending are named."""
    if not written:
        _sdn_lock.release(client, token)
        return PveApiError(f'{exc}. Nothing was changed.', reason=exc.reason, status=exc.status, errors=exc.errors)
    done = ', '.join(written)
    if token and can_roll_back:
        try:
            _sdn_lock.rollback(client, token)
        except PveApiError as failure:
            note = f'rolling back its earlier writes ({done}) failed too ({failure}): they are left pending; revert them in Datacenter > SDN'
        else:
            note = f'its earlier writes ({done}) were rolled back (POST /cluster/sdn/rollback). Nothing was changed.'
    elif token:
        _sdn_lock.release(client, token)
        note = (
            f'its earlier writes ({done}) are left pending beside the changes made before this run, which a rollback would '
            'drop too; apply or revert them in Datacenter > SDN'
        )
    else:
        note = (
            f'its earlier writes ({done}) are left pending (this PVE has no SDN rollback, PVE 9 has); revert them in Datacenter > SDN, '
            'or apply them with pending_changes: apply'
        )
    return PveApiError(f'{exc}; {note}', reason=exc.reason, status=exc.status, errors=exc.errors)


def _check_reloads(client, upid, nodes):
    try:
        failed = _sdn_reload.failures(client, upid, nodes) if upid else {}
    except PveApiError as exc:
        raise _sdn_reload.ReloadFailed(
            f'the SDN config was applied (PUT /cluster/sdn), but whether every node reloaded its network could not be read ({exc}). '
            "See each node's network reload task (srvreload) since the apply; where one failed, fix that node's network, then apply again "
            '(Datacenter > SDN: Apply)',
            upid,
        ) from None
    if failed:
        raise _sdn_reload.ReloadFailed(
            'the SDN config was applied (PUT /cluster/sdn), but the network of '
            + '; '.join(f'node {node} was not reloaded: {why}' for node, why in sorted(failed.items()))
            + ". Its VNets may be missing there: fix the node's network, then apply again (Datacenter > SDN: Apply)",
            upid,
        )


def _apply_params(plan):
    return next((action.params for action in plan.actions if action.kind == _sdn_plan.APPLY), {})


def _describe(action):
    if action.kind == _sdn_plan.APPLY:
        return 'apply' + (' (with the changes made before)' if action.params.get('pending') else '')
    return f'{action.kind} {action.params["kind"]} {action.params["id"]}'
