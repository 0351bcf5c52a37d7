# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The status page (docs/gitops.md): one self-contained HTML file rendered from the run history (``_history``). Every
machine with its state, the fields that differ and its last runs; then the runs with their commits. No script, no
external asset, no server: it opens from the file system, from an AWX artifact, or behind any static web server.

Pure: documents in, HTML out. Every value from the history is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from ansible_collections.puls.proxmox.plugins.module_utils._history import machines_from

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #1b1f23; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .35em .6em; border-bottom: 1px solid #d0d7de; }
th { background: #f6f8fa; }
code { font-size: .95em; }
.state { font-weight: 600; padding: .1em .5em; border-radius: .8em; white-space: nowrap; }
.in-sync { background: #dafbe1; } .drifted { background: #fff8c5; } .pending-restart { background: #ddf4ff; }
.failed { background: #ffebe9; } .orphan { background: #eee; } .removed { background: #f6f8fa; color: #57606a; }
.applied { background: #ddf4ff; }
ul { margin: 0; padding-left: 1.2em; }
"""


def _state(state: str) -> str:
    return '<span class="state {0}">{1}</span>'.format(escape(state.replace(' ', '-')), escape(state))


def _commit(git: Mapping[str, Any] | None) -> str:
    if not git:
        return 'no commit (not in a Git work tree)'
    return '<code>{0}</code>{1}'.format(escape(git['commit'][:12]), ' (uncommitted changes)' if git.get('dirty') else '')


def _value(value: Any) -> str:
    return '<code>{0}</code>'.format(escape('' if value is None else str(value)))


def _difference(entry: Mapping[str, Any]) -> str:
    field = '<code>{0}</code>'.format(escape(str(entry.get('field'))))
    if entry.get('pending_restart'):
        return f'<li>{field}: waits for a restart</li>'
    if 'declared' in entry or 'observed' in entry:
        return '<li>{0}: declared {1}, observed {2}</li>'.format(field, _value(entry.get('declared')), _value(entry.get('observed')))
    return f'<li>{field}</li>'


def _list(items: list[str], empty: str = '') -> str:
    return '<ul>{0}</ul>'.format(''.join(items)) if items else empty


def _mode(check_mode: bool) -> str:
    return 'detect (check run)' if check_mode else 'apply'


def render(history: list[Mapping[str, Any]], title: str = 'Puls status') -> str:
    """The page of ``history`` (run documents, oldest first)."""
    machines = machines_from(history)
    latest = history[-1] if history else None
    rows = []
    for machine in machines:
        runs = [
            '<li>{0} {1}: {2}</li>'.format(escape(run['finished']), escape(_mode(run['check_mode'])), escape(', '.join(run['actions'])))
            for run in machine['runs']
        ]
        rows.append(
            '<tr data-machine="{0}"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td></tr>'.format(
                escape(machine['name']),
                escape(machine['kind']),
                _state(machine['state']),
                _list([_difference(entry) for entry in machine['differences']], 'none'),
                _list(runs),
            )
        )
    run_rows = []
    for run in reversed(history):
        totals = ', '.join(f'{count} {kind}' for kind, count in (run.get('totals') or {}).items() if count)
        run_rows.append(
            '<tr data-run="{0}"><td>{0}</td><td>{1}</td><td>{2}</td><td>{3}</td><td>{4}</td></tr>'.format(
                escape(run['finished']), escape(_mode(run['check_mode'])), _state(run['outcome']), _commit(run.get('git')), escape(totals or 'nothing')
            )
        )
    summary = 'No run in the history yet.'
    if latest:
        summary = 'Last run {0} ({1}): {2}, from {3}.'.format(
            escape(latest['finished']), escape(_mode(latest['check_mode'])), _state(latest['outcome']), _commit(latest.get('git'))
        )
    return '\n'.join(
        [
            '<!DOCTYPE html>',
            '<html lang="en"><head><meta charset="utf-8">',
            # Nothing but the inline style may load: a browser refuses (and reports) any script or asset, wherever from.
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f'<title>{escape(title)}</title>',
            f'<style>{STYLE}</style></head><body>',
            f'<h1>{escape(title)}</h1>',
            f'<p id="summary">{summary}</p>',
            '<h2>Machines</h2>',
            '<table id="machines"><thead><tr><th>machine</th><th>kind</th><th>state</th><th>fields that differ</th><th>last runs</th></tr></thead><tbody>',
            *rows,
            '</tbody></table>',
            '<h2>Runs</h2>',
            '<table id="runs"><thead><tr><th>finished</th><th>mode</th><th>outcome</th><th>commit</th><th>totals</th></tr></thead><tbody>',
            *run_rows,
            '</tbody></table>',
            '</body></html>',
            '',
        ]
    )
