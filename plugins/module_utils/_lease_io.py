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
    'key': {'type': 'str', 'no_log': False},
    'keys': {'type': 'list', 'elements': 'str', 'no_log': False},
    'run_id': {'type': 'str', 'required': True},
    'state': {'type': 'str', 'choices': [ACQUIRED, RELEASED], 'default': ACQUIRED},
    'ttl': {'type': 'int', 'default': 900},
    'wait': {'type': 'int', 'default': 0},
    'wait_delay': {'type': 'int', 'default': 10},
}
MUTUALLY_EXCLUSIVE = [('key', 'keys')]
REQUIRED_ONE_OF = [('key', 'keys')]


@dataclass(frozen=True)
class LeaseRequest:
    """The leases asked for: key's one, or keys' several, taken all together (as one) or released together."""

    keys: tuple[str, ...]
    run_id: str
    state: str
    ttl: int
    wait: int = 0
    wait_delay: int = 10
    # Asked for with the option keys (a list), not key: the result names them as keys.
    several: bool = False

    @classmethod
    def from_params(cls, params):
        if params['ttl'] < 1:
            raise ValueError(f'ttl is {params["ttl"]}: give the lease\'s lifetime in seconds, at least 1')
        if params.get('wait', 0) < 0:
            raise ValueError(f'wait is {params["wait"]}: give the seconds to wait for the lease, 0 not to wait')
        if params.get('wait_delay', 10) < 1:
            raise ValueError(f'wait_delay is {params["wait_delay"]}: give the seconds between two looks at the lease, at least 1')
        several = params.get('keys') is not None
        keys = params['keys'] if several else [params['key']]
        return cls(
            tuple(dict.fromkeys(_lease_plan.validate_key(key) for key in keys)),
            _lease_plan.validate_run_id(params['run_id']),
            params['state'],
            params['ttl'],
            params.get('wait', 0),
            params.get('wait_delay', 10),
            several,
        )

    @property
    def named(self) -> str:
        """The leases as a message names them."""
        if len(self.keys) == 1:
            return f'the lease {self.keys[0]}'
        return f'the {len(self.keys)} leases {", ".join(self.keys)}'


def _pause(attempt: int) -> None:
    # Apart by a random share, so that the writers that collided do not collide again.
    time.sleep(random.uniform(0.02, 0.1) * attempt)


def reconcile(client, request: LeaseRequest, check_mode: bool, now=time.time, hostname=socket.gethostname, sleep=time.sleep) -> dict:
    """Acquire (or renew) or release request.keys, all together, for request.run_id, waiting up to request.wait seconds
    while another live run holds one of them; the module's result, with the seconds waited (waited)."""
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
            together = f' (one of the {len(request.keys)} leases taken together)' if len(request.keys) > 1 else ''
            progress.note(
                f'waiting for the lease {holder["key"]}{together}, held by run {holder["run_id"]} on controller {holder["controller"]}',
                started=started,
            )
        sleep(min(request.wait_delay, left))


def _reconcile_once(client, request: LeaseRequest, check_mode: bool, now, hostname) -> dict:
    """One look at the leases: acquire (or renew) or release them; the module's result."""
    node = _lease_plan.lease_node(client.get('/nodes', context='listing the nodes of the cluster'))
    if node is None:
        raise PveApiError(f'no node of the cluster is online to keep {request.named} in its notes')
    controller = _lease_plan.controller_name(hostname())
    doing = f'{"taking" if request.state == ACQUIRED else "releasing"} {request.named} in the notes of node {node}'
    outcome: dict[str, Any] = {}

    def change(notes):
        leases, moment = _lease_plan.parse(notes.description), now()
        if request.state == ACQUIRED:
            decision = _lease_plan.acquire(leases, request.keys, request.run_id, controller, moment, request.ttl)
            wanted = decision.leases
        else:
            decision = _lease_plan.Decision(False, None)
            wanted = _lease_plan.release(leases, request.keys, request.run_id, moment)
        after = wanted if wanted is not None else leases
        mine = after.get(request.keys[0])
        outcome.update(
            acquired=decision.acquired,
            expires=mine.expires if mine is not None and mine.run == request.run_id else None,
            held_by=dict(decision.held_by.describe(moment), key=decision.key) if decision.held_by else None,
            taken_over=dict(decision.taken_over.describe(moment), key=decision.key) if decision.taken_over else None,
            others={key: holder.describe(moment) for key, holder in _lease_plan.others(leases, request.run_id, moment).items()},
            changed=wanted is not None,
            diff={'before': _entry_lines(request.keys, leases), 'after': _entry_lines(request.keys, after)},
        )
        if wanted is None:
            return None
        # Asked in check mode too, so that the plan run is refused as the real run would be.
        if not outcome.get('checked'):
            _privileges.require(client, [_privileges.need(f'to keep {request.named} in the notes of node {node}', 'Sys.Modify', '/')], doing)
            outcome['checked'] = True
        if check_mode:
            return None
        try:
            return _lease_plan.render(notes.description, wanted, MAX_NODE_NOTES_LENGTH)
        except _notes.NotesTooLongError as exc:
            raise PveApiError(f'{doing} failed: {exc}') from None

    update_notes(client, node, change, doing, attempts=WRITE_ATTEMPTS, pause=_pause)
    outcome.pop('checked', None)
    named = {'lease_keys': list(request.keys)} if request.several else {'key': request.keys[0]}
    return dict(outcome, node=node, run_id=request.run_id, controller=controller, **named)


def _entry_lines(keys, leases) -> str:
    return ''.join(f'{key}={leases[key].render()}\n' for key in keys if key in leases)
