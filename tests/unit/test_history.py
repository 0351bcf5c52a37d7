"""The run history and the status page (plugins/module_utils/_history.py, _status_page.py): each machine's state,
the outcome of a run, the page from several runs. The real runs and the browser are tests/integration/test_gitops.py's."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.module_utils._history import differences, machine_state, machines_from, run_document
from ansible_collections.puls.proxmox.plugins.module_utils._status_page import render

COMMIT = '3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345'


def summary(machines, check_mode, failed=(), nothing_to_do=False):
    return {
        'machines': machines,
        'totals': {'update': 1, 'ok': 1},
        'failed': list(failed),
        'nothing_to_do': nothing_to_do,
        'check_mode': check_mode,
        'git': {'commit': COMMIT, 'dirty': False, 'work_tree': '/srv/infra'},
    }


def test_the_differences_are_the_changed_entries_with_their_values_and_the_keys_waiting_for_a_restart():
    vm = {
        'changes': ['cores', 'memory'],
        'reboot_required': ['cores', 'ipconfig0'],
        'diff': {'before': {'cores': 1, 'memory': 1024}, 'after': {'cores': 2, 'memory': 2048}},
    }
    assert differences(vm) == [
        {'field': 'cores', 'observed': 1, 'declared': 2},
        {'field': 'memory', 'observed': 1024, 'declared': 2048},
        {'field': 'ipconfig0', 'pending_restart': True},
    ]
    # Without --diff only the names.
    assert differences({'changes': ['cores'], 'reboot_required': []}) == [{'field': 'cores'}]
    assert differences(None) == []


def test_a_machine_state_follows_its_words_the_mode_and_the_failures():
    assert machine_state(['ok'], True) == 'in sync'
    assert machine_state(['update'], True) == 'drifted'
    assert machine_state(['update'], False) == 'in sync'
    assert machine_state(['update (reboot needed)'], False) == 'pending restart'
    assert machine_state(['ok'], False, machine_differences=[{'field': 'cores', 'pending_restart': True}]) == 'pending restart'
    assert machine_state(['orphan'], False) == 'orphan'
    assert machine_state(['prune'], True) == 'drifted'
    assert machine_state(['prune'], False) == 'removed'
    assert machine_state(['create'], False, failed=True) == 'failed'


def test_the_history_and_its_page_show_each_machine_at_its_latest_run_and_every_run_with_its_commit():
    first = run_document(
        summary([{'kind': 'vm', 'name': 'web1', 'actions': ['create']}, {'kind': 'vm', 'name': '<b>x</b>', 'actions': ['ok']}], False),
        '2026-12-01T10:00:00Z',
        '2026-12-01T10:01:00Z',
        {},
    )
    second = run_document(
        summary([{'kind': 'vm', 'name': 'web1', 'actions': ['update']}], True, failed=['web9']),
        '2026-12-01T11:00:00Z',
        '2026-12-01T11:01:00Z',
        {('vm', 'web1'): [{'field': 'cores', 'observed': 1, 'declared': 2}]},
    )
    assert (first['outcome'], second['outcome']) == ('applied', 'failed')
    assert second['machines'][-1] == {'kind': 'host', 'name': 'web9', 'actions': ['failed'], 'differences': [], 'state': 'failed'}
    machines = machines_from([first, second])
    # Worst first: the failed host, then the drifted VM.
    assert [(m['name'], m['state']) for m in machines] == [('web9', 'failed'), ('web1', 'drifted'), ('<b>x</b>', 'in sync')]
    assert [run['actions'] for run in machines[1]['runs']] == [['update'], ['create']]
    page = render([first, second])
    assert page.count('<tr data-run=') == 2 and page.count('<code>3f2a9c1b7d4e</code>') == 3
    assert '<code>cores</code>: declared <code>2</code>, observed <code>1</code>' in page
    # Names are escaped, and nothing loads from anywhere: no script, no link, no src.
    assert '&lt;b&gt;x&lt;/b&gt;' in page and '<b>x' not in page
    assert '<script' not in page and ' src=' not in page and '<link' not in page
    assert render([]).count('No run in the history yet.') == 1
