# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run history (docs/gitops.md): one JSON document per run of the reconcile role, with its plan, each machine's
declared-versus-observed differences and state, its outcome and the Git commit; and each machine's state from the
history, for the status page (``_status_page``).

Pure: the plan summary callback gives the summary of a run and writes the documents; this says what they hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import OK, action_kind

FORMAT = 'puls.proxmox.history/1'
# A machine's state in one run, worst first: what the status page shows.
IN_SYNC, DRIFTED, PENDING_RESTART, FAILED, ORPHAN, REMOVED = 'in sync', 'drifted', 'pending restart', 'failed', 'orphan', 'removed'
STATES = (FAILED, DRIFTED, PENDING_RESTART, ORPHAN, IN_SYNC, REMOVED)
REBOOT_NEEDED = 'update (reboot needed)'


def differences(vm: Mapping[str, Any] | None) -> list[dict]:
    """pve_vm's result as declared-versus-observed differences: each changed entry (``field``, and ``observed`` and
    ``declared`` when the run had --diff), then each key that waits for a restart (``pending_restart``)."""
    if not vm:
        return []
    diff = vm.get('diff') or {}
    before, after = diff.get('before') or {}, diff.get('after') or {}
    found = []
    for field in vm.get('changes') or ():
        entry: dict[str, Any] = {'field': str(field)}
        if field in before or field in after:
            entry.update(observed=before.get(field), declared=after.get(field))
        found.append(entry)
    changed = {entry['field'] for entry in found}
    found += [{'field': str(field), 'pending_restart': True} for field in vm.get('reboot_required') or () if field not in changed]
    return found


def machine_state(actions: Iterable[str], check_mode: bool, failed: bool = False, machine_differences=()) -> str:
    """One machine's state after a run: failed; an orphan; waiting for a restart; in sync (nothing to do, or a real run
    did it); drifted (a check run found work); removed (a real run destroyed or pruned it)."""
    actions = list(actions)
    kinds = {action_kind(action) for action in actions}
    if failed:
        return FAILED
    if kinds == {ORPHAN}:
        return ORPHAN
    if REBOOT_NEEDED in actions or any(entry.get('pending_restart') for entry in machine_differences):
        return PENDING_RESTART
    if actions == [OK]:
        return IN_SYNC
    if check_mode:
        return DRIFTED
    return REMOVED if kinds & {'destroy', 'prune'} else IN_SYNC


def run_outcome(summary: Mapping[str, Any]) -> str:
    """failed, in sync (nothing to do), drifted (a check run found work) or applied (a real run did it)."""
    if summary['failed']:
        return 'failed'
    if summary['nothing_to_do']:
        return 'in sync'
    return 'drifted' if summary['check_mode'] else 'applied'


def run_document(summary: Mapping[str, Any], started: str, finished: str, differences_by_machine: Mapping) -> dict:
    """The history document of one run, from the plan summary (``machines``, ``totals``, ``failed``, ``nothing_to_do``,
    ``check_mode``, ``git``) and each machine's differences by (kind, name)."""
    failed = set(summary['failed'])
    machines = []
    for machine in summary['machines']:
        found = list(differences_by_machine.get((machine['kind'], machine['name'])) or ())
        machines.append(dict(machine, differences=found, state=machine_state(machine['actions'], summary['check_mode'], machine['name'] in failed, found)))
    listed = {machine['name'] for machine in machines}
    machines += [{'kind': 'host', 'name': host, 'actions': ['failed'], 'differences': [], 'state': FAILED} for host in summary['failed'] if host not in listed]
    for machine in machines:
        if machine['name'] in failed:
            machine['state'] = FAILED
    return {
        'format': FORMAT,
        'started': started,
        'finished': finished,
        'check_mode': summary['check_mode'],
        'outcome': run_outcome(summary),
        'git': summary.get('git'),
        'machines': machines,
        'totals': summary['totals'],
        'failed': summary['failed'],
        'nothing_to_do': summary['nothing_to_do'],
    }


def machines_from(history: list[Mapping[str, Any]], last_runs: int = 5) -> list[dict]:
    """Each machine of the history (runs oldest first): its state and differences in the latest run that lists it,
    and its last runs (newest first: ``finished``, ``check_mode``, ``actions``, ``state``, ``commit``)."""
    machines: dict[tuple, dict] = {}
    for run in history:
        commit = (run.get('git') or {}).get('commit')
        for machine in run.get('machines') or ():
            key = (machine['kind'], machine['name'])
            seen = machines.setdefault(key, {'kind': machine['kind'], 'name': machine['name'], 'runs': []})
            seen.update(state=machine['state'], differences=machine.get('differences') or [])
            seen['runs'].insert(
                0, {'finished': run['finished'], 'check_mode': run['check_mode'], 'actions': machine['actions'], 'state': machine['state'], 'commit': commit}
            )
    for machine in machines.values():
        del machine['runs'][last_runs:]
    return sorted(machines.values(), key=lambda m: (STATES.index(m['state']) if m['state'] in STATES else len(STATES), m['kind'], m['name']))
