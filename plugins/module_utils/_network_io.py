# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_node_network's run: read the node (its address, its interfaces, staged changes), plan, check privileges, act.

Everything that can be refused is refused before the first write: the options (``_network_plan.check_options``), the
node, an unowned or management interface, changes someone else staged, missing privileges. A real run then stages
each change (``POST``/``PUT``/``DELETE /nodes/{node}/network[/{iface}]``, written to ``/etc/network/interfaces.new``)
and applies them all with one reload (``PUT /nodes/{node}/network``, the task ``srvreload``). When PVE refuses a
change midway, or the reload itself before its task starts (a node without ifupdown2: pve-manager
``PVE/API2/Network.pm`` assert_ifupdown2_installed), the changes this run staged are reverted (``DELETE
/nodes/{node}/network``, revert_network_changes), so that no later run finds them staged as someone else's; unless
changes were staged before the run: those are not this run's to drop.
"""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils import _network_plan
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._privileges import network_needs, require

# Reloading the network (ifreload -a) takes seconds.
RELOAD_TIMEOUT = 120


def reconcile(client, params, check_mode=False):
    """Converge the declared interfaces of params['node']; returns the module result."""
    spec = _network_plan.check_options(params)
    observed = read(client, spec.node)
    plan = _network_plan.plan(spec, observed)
    require(client, network_needs(spec.node, plan.changed), f'the plan for the network of {spec.node}')
    applied = False
    if plan.changed and not check_mode:
        applied = execute(client, spec.node, plan, had_pending=bool(observed.changes))
    return {
        'changed': plan.changed,
        'diff': plan.diff,
        'changes': list(plan.changes),
        'actions': [_describe(action) for action in plan.actions],
        'applied': applied,
        'management': sorted(_network_plan.management_chain(observed.interfaces, observed.address)),
    }


def read(client, node):
    """The node's interfaces as listed (the staged config when changes are pending), the changes, its address."""
    status = client.get('/cluster/status', context='reading the cluster status (the address of each node)') or []
    nodes = {item.get('name'): item for item in status if item.get('type') == 'node'}
    if node not in nodes:
        raise PveApiError(f'node: {node!r} is not a node of this cluster; its nodes are {", ".join(sorted(n for n in nodes if n))}')
    answer = client.get_answer(f'/nodes/{node}/network', context=f'listing the network devices of {node}') or {}
    interfaces = {item['iface']: item for item in answer.get('data') or () if item.get('iface')}
    return _network_plan.Observed(interfaces, answer.get('changes') or None, nodes[node].get('ip'))


def execute(client, node, plan, had_pending):
    """Stage the plan's changes and apply them; returns whether the network was applied."""
    base = f'/nodes/{node}/network'
    staged = False
    for action in plan.actions:
        params = action.params
        try:
            if action.kind == _network_plan.CREATE:
                client.post(base, iface=params['iface'], context=f'creating {params["iface"]} on {node}', **params['params'])
            elif action.kind == _network_plan.UPDATE:
                client.put(
                    f'{base}/{params["iface"]}',
                    delete=','.join(params['delete']) or None,
                    idempotent=True,
                    context=f'updating {params["iface"]} on {node}',
                    **params['params'],
                )
            elif action.kind == _network_plan.DELETE:
                client.delete(f'{base}/{params["iface"]}', idempotent=True, context=f'deleting {params["iface"]} on {node}')
            elif action.kind == _network_plan.APPLY:
                client.run_task('PUT', base, idempotent=True, task_timeout=RELOAD_TIMEOUT, context=f'applying the network of {node}')
                return True
            staged = True
        except PveApiError as exc:
            if action.kind == _network_plan.APPLY and exc.upid:
                # A reload task that ran had moved interfaces.new over interfaces first: nothing is left to revert.
                if exc.exitstatus:
                    raise _failed(
                        exc,
                        f'; PVE had moved the staged changes into /etc/network/interfaces before ifreload -a failed, so nothing is '
                        f'left staged and the next run finds nothing to change, while {node} may run them in part: correct the cause '
                        'on the node, then reload its network (Apply Configuration in the web interface, or ifreload -a)',
                    ) from None
                raise
            if not staged:
                raise
            if had_pending:
                raise _failed(
                    exc,
                    f'; the changes this run staged on {node} are left staged with those staged before it (a revert would drop '
                    f'those too): apply or revert them all (the node > System > Network){_advice(exc, node)}',
                ) from None
            client.delete(base, idempotent=True, context=f'reverting the network changes this run staged on {node}')
            raise _failed(exc, f'; the changes this run had staged on {node} were reverted, so its network is as it was{_advice(exc, node)}') from None
    return False


def _failed(exc, said):
    """exc with ``said`` added to its message."""
    return PveApiError(f'{exc}{said}', reason=exc.reason, status=exc.status, errors=exc.errors, upid=exc.upid, exitstatus=exc.exitstatus, log=exc.log)


def _advice(exc, node):
    if 'ifupdown2' not in str(exc.reason):
        return ''
    return (
        f". PVE applies a node's network only with Proxmox's ifupdown2, 1.2.8 or later (pve-manager PVE/API2/Network.pm "
        f'assert_ifupdown2_installed): install it on {node} (apt install ifupdown2), or set apply: false to only stage the '
        "changes, which the node applies at its next boot (pve-manager's pvenetcommit.service)"
    )


def _describe(action):
    if action.kind == _network_plan.APPLY:
        return 'apply' + (' (with the changes staged before)' if action.params.get('pending') else '')
    if action.params.get('release'):
        return f'update {action.params["iface"]} (release the ports it no longer has)'
    return f'{action.kind} {action.params["iface"]}'
