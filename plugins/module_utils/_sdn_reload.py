# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether the SDN apply reloaded each node's network. Its task ``reloadnetworkall`` ends OK whatever the nodes do
(pve-network ``src/PVE/API2/Network/SDN.pm`` reload): it runs ``pvesh set /nodes/NODE/network`` per node and only
prints a failure (``warn $@``: ``command 'pvesh set /nodes/NODE/network ...' failed: ...``, a node it cannot reach);
that command starts the node's own task ``srvreload`` (pve-manager ``PVE/API2/Network.pm`` reload_network_config,
``ifreload -a``), whose failure does not even fail pvesh (a CLI worker's result is not its exit status, pve-common
``RESTEnvironment.pm`` fork_worker). So the apply's log and each node's ``srvreload`` tasks since the apply began
(``GET /nodes/NODE/tasks``, ``typefilter``, ``since``: pve-manager ``PVE/API2/Tasks.pm``) tell what happened.

Those tasks have just ended: the node's task index (the list's default ``source``) gets one only when the node's next
task starts or pvestatd's next cycle runs (``RESTEnvironment.pm`` active_workers, pve-manager
``PVE/Service/pvestatd.pm`` update_status, every 10 s). Until then the active list shows it as ``RUNNING``, ended or
not, so the list is read with ``source=all`` and such a task's own status tells how it ended.
"""

from __future__ import annotations

import re

from ansible_collections.puls.proxmox.plugins.module_utils._tasks import LOG_FETCH_LIMIT, parse_upid


class ReloadFailed(RuntimeError):
    """The SDN config was applied, but not every node's network was reloaded (``upid``: the apply's task)."""

    def __init__(self, message, upid):
        super().__init__(message)
        self.upid = upid


_PVESH_FAILED = re.compile(r"command 'pvesh set /nodes/(\S+)/network[^']*' failed: (.*)$")


def failures(client, upid, nodes):
    """node -> why its network was not reloaded by the apply task upid, for the cluster's nodes and the online ones
    given (whose tasks are read)."""
    where, _type, _id = parse_upid(upid)
    started = int(str(upid).split(':')[4], 16)
    log = client.get(f'/nodes/{where}/tasks/{upid}/log', context='reading the log of the SDN apply', start=0, limit=LOG_FETCH_LIMIT) or []
    found = {}
    for entry in log:
        match = _PVESH_FAILED.match(str(entry.get('t', '')))
        if match:
            found[match.group(1)] = f'PVE could not run its network reload there ({match.group(2)})'
    for node in nodes:
        if node in found:
            continue
        tasks = client.get(f'/nodes/{node}/tasks', typefilter='srvreload', since=started, source='all', context=f'listing the network reloads of {node}') or []
        for task in tasks:
            status = _ended_with(client, node, task)
            if status and status != 'OK' and not status.startswith('WARNINGS'):
                found[node] = f'its network reload ({task.get("upid")}) ended with: {status}'
                break
    return found


def _ended_with(client, node, task):
    """How a listed task ended ('' while it runs): a task of the active list is RUNNING there, ended or not."""
    status = str(task.get('status') or '')
    if status != 'RUNNING':
        return status
    answer = client.get(f'/nodes/{node}/tasks/{task["upid"]}/status', context=f'reading the status of the network reload of {node}') or {}
    return str(answer.get('exitstatus') or '') if answer.get('status') == 'stopped' else ''
