# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_lease's I/O half: the lease record (``_lease_plan``) read from and written to the notes of the lease node.

The lease node is the lowest-named online node (``GET /nodes``). Every acquire, renew and release is a
compare-and-swap: the notes are written with the digest of the read (``PUT /nodes/{node}/config``,
pve-manager PVE/API2/NodeConfig.pm), and on PVE's "detected modified configuration" read and decided
again, so two runs never both take one lease. Reading needs Sys.Audit on /, writing Sys.Modify on /.

A lease another live run holds is waited for when asked (``wait`` seconds): read again every ``wait_delay`` seconds
until this run gets it, the holder lets it go or expires, or the time is up; each look is noted for the action plugin
(module_utils/_progress.py), which shows what is waited for, the run holding it and the time elapsed.
"""

from __future__ import annotations

import random
import socket
import time
from dataclasses import dataclass
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils import _lease_plan, _notes, _privileges
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._files_record import MAX_NODE_NOTES_LENGTH, update_notes

ACQUIRED, RELEASED = 'acquired', 'released'
# Many forks of several runs write the one record at once: more tries than a single writer needs, spread apart.
WRITE_ATTEMPTS = 20

ARGUMENT_SPEC = {
    'key': {'type': 'str', 'required': True, 'no_log': False},
    'run_id': {'type': 'str', 'required': True},
    'state': {'type': 'str', 'choices': [ACQUIRED, RELEASED], 'default': ACQUIRED},
    'ttl': {'type': 'int', 'default': 900},
    'wait': {'type': 'int', 'default': 0},
    'wait_delay': {'type': 'int', 'default': 10},
}


@dataclass(frozen=True)
class LeaseRequest:
    key: str
    run_id: str
    state: str
    ttl: int
    wait: int = 0
    wait_delay: int = 10

    @classmethod
    def from_params(cls, params):
        if params['ttl'] < 1:
            raise ValueError(f'ttl is {params["ttl"]}: give the lease\'s lifetime in seconds, at least 1')
        if params.get('wait', 0) < 0:
            raise ValueError(f'wait is {params["wait"]}: give the seconds to wait for the lease, 0 not to wait')
        if params.get('wait_delay', 10) < 1:
            raise ValueError(f'wait_delay is {params["wait_delay"]}: give the seconds between two looks at the lease, at least 1')
        return cls(
            _lease_plan.validate_key(params['key']),
            _lease_plan.validate_run_id(params['run_id']),
            params['state'],
            params['ttl'],
            params.get('wait', 0),
            params.get('wait_delay', 10),
        )


def _pause(attempt: int) -> None:
    # Apart by a random share, so that the writers that collided do not collide again.
    time.sleep(random.uniform(0.02, 0.1) * attempt)


def reconcile(client, request: LeaseRequest, check_mode: bool, now=time.time, hostname=socket.gethostname, sleep=time.sleep) -> dict:
    """Acquire (or renew) or release request.key for request.run_id, waiting up to request.wait seconds while another
    live run holds it; the module's result, with the seconds waited (waited)."""
    started = now()
    progress = getattr(client, 'progress', None)
    while True:
        result = _reconcile_once(client, request, check_mode, now, hostname)
        waited = now() - started
        holder = result['held_by']
        left = request.wait - waited
        if request.state != ACQUIRED or result['acquired'] or holder is None or left <= 0:
            return dict(result, waited=int(waited))
        if progress is not None:
            progress.note(
                f'waiting for the lease {request.key}, held by run {holder["run_id"]} on controller {holder["controller"]}',
                started=started,
            )
        sleep(min(request.wait_delay, left))


def _reconcile_once(client, request: LeaseRequest, check_mode: bool, now, hostname) -> dict:
    """One look at the lease: acquire (or renew) or release it; the module's result."""
    node = _lease_plan.lease_node(client.get('/nodes', context='listing the nodes of the cluster'))
    if node is None:
        raise PveApiError(f'no node of the cluster is online to keep the lease {request.key} in its notes')
    controller = _lease_plan.controller_name(hostname())
    doing = f'{"taking" if request.state == ACQUIRED else "releasing"} the lease {request.key} in the notes of node {node}'
    outcome: dict[str, Any] = {}

    def change(notes):
        leases, moment = _lease_plan.parse(notes.description), now()
        if request.state == ACQUIRED:
            decision = _lease_plan.acquire(leases, request.key, request.run_id, controller, moment, request.ttl)
            wanted = decision.leases
        else:
            decision = _lease_plan.Decision(False, None)
            wanted = _lease_plan.release(leases, request.key, request.run_id, moment)
        mine = (wanted if wanted is not None else leases).get(request.key)
        outcome.update(
            acquired=decision.acquired,
            expires=mine.expires if mine is not None and mine.run == request.run_id else None,
            held_by=decision.held_by.describe(moment) if decision.held_by else None,
            taken_over=decision.taken_over.describe(moment) if decision.taken_over else None,
            others={key: holder.describe(moment) for key, holder in _lease_plan.others(leases, request.run_id, moment).items()},
            changed=wanted is not None,
            diff={'before': _entry_line(request.key, leases), 'after': _entry_line(request.key, wanted if wanted is not None else leases)},
        )
        if wanted is None:
            return None
        # Asked in check mode too, so that the plan run is refused as the real run would be.
        if not outcome.get('checked'):
            _privileges.require(client, [_privileges.need(f'to keep the lease {request.key} in the notes of node {node}', 'Sys.Modify', '/')], doing)
            outcome['checked'] = True
        if check_mode:
            return None
        try:
            return _lease_plan.render(notes.description, wanted, MAX_NODE_NOTES_LENGTH)
        except _notes.NotesTooLongError as exc:
            raise PveApiError(f'{doing} failed: {exc}') from None

    update_notes(client, node, change, doing, attempts=WRITE_ATTEMPTS, pause=_pause)
    outcome.pop('checked', None)
    return dict(outcome, key=request.key, node=node, run_id=request.run_id, controller=controller)


def _entry_line(key: str, leases) -> str:
    holder = leases.get(key)
    return f'{key}={holder.render()}\n' if holder is not None else ''
