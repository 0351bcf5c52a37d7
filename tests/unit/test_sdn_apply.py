# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_sdn's apply against a stand-in for PVE's API whose node is gone right after the apply committed (its network
reload broke its link): the error says the config was applied, never that it was rolled back or nothing changed."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._actions import Action, Plan
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_io import execute
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_plan import APPLY, CREATE
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_reload import ReloadFailed
from ansible_collections.puls.proxmox.plugins.module_utils._tasks import TaskResult

UPID = 'UPID:pve1:00001234:00005678:6750A000:reloadnetworkall::root@pam:'


class UnreachableAfterApply:
    """PVE as the module's client sees it: writes and the apply succeed; pve2 answers no request after the apply, as
    pve-manager's proxy answers for a node it cannot reach (595)."""

    def __init__(self):
        self.requests = []

    def post(self, path, context=None, **params):
        self.requests.append(('POST', path))

    def run_task(self, method, path, **params):
        self.requests.append((method, path))
        return TaskResult(UPID)

    def get(self, path, context=None, **params):
        self.requests.append(('GET', path))
        if path.startswith('/nodes/pve2/'):
            raise PveApiError(f'{context}: no route to host', reason='no route to host', status=595)
        return []


def test_a_node_unreadable_after_the_apply_fails_saying_the_config_was_applied():
    client = UnreachableAfterApply()
    create = Action(CREATE, {'kind': 'zone', 'id': 'flat', 'path': '/cluster/sdn/zones', 'params': {'zone': 'flat', 'type': 'simple'}})
    plan = Plan((create, Action(APPLY, {'pending': [], 'sdn_pending': False})), {}, {})
    with pytest.raises(ReloadFailed) as raised:
        execute(client, plan, 'token-1', ['pve1', 'pve2'])
    message = str(raised.value)
    assert message.startswith('the SDN config was applied (PUT /cluster/sdn), but whether every node reloaded its network could not be read')
    assert 'no route to host' in message and 'Nothing was changed' not in message and raised.value.upid == UPID
    assert ('POST', '/cluster/sdn/rollback') not in client.requests
