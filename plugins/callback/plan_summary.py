# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan summary: one line per machine of a puls.proxmox.reconcile run, and the totals."""

from __future__ import annotations

DOCUMENTATION = r"""
name: plan_summary
type: aggregate
short_description: Print what a reconcile run plans or did, one line per machine, and optionally write it as JSON
description:
  - >-
    At the end of a run of C(puls.proxmox.site), C(puls.proxmox.destroy) or any play that runs the
    C(puls.proxmox.reconcile) role, prints one line per machine (template, VM or ISO) with its actions,
    for example C(web1: create, provision base.yml, web.yml), and a total such as
    C(1 to create, 0 to update, 0 to build, 0 to rebuild, 1 to provision, 0 to replace, 0 to destroy, 0 to prune, 3 ok).
  - >-
    The actions are C(create), C(update), "update (reboot needed)", C(build), "rebuild (REASON)",
    C(provision FILE, FILE), C(replace OLD), C(destroy), C(prune), C(orphan) (an owned guest declared nowhere and
    left alone), or C(ok) alone when nothing is to be done.
    A total counts machines, so a machine with two files to run counts once in C(to provision). Orphans are
    counted as C(N orphan) after C(N ok), when there are any.
  - >-
    A check run (C(--check)) is the plan and is headed "Plan (check mode: nothing was changed)";
    a real run is headed "Summary (real run)".
  - >-
    Hosts that failed or were unreachable in the run are listed as C(HOST: failed) and counted in the total.
  - >-
    The machines' actions come from the fact C(puls_plan) (C(kind), C(name), C(actions)) that the
    role sets for each machine in its task C(Record the plan). Nothing else of a task's result is read,
    so nothing else (no secret) is printed. Its C(differences) (the fields of a VM that differ, from pve_vm's
    diff, where secrets are masked) go only to the history of O(history_dir).
  - >-
    It works alongside the stdout callback. It is not on by default; enable it for a run with
    E(ANSIBLE_CALLBACKS_ENABLED=puls.proxmox.plan_summary), or in C(ansible.cfg) with
    C(callbacks_enabled = puls.proxmox.plan_summary) in the C([defaults]) section.
author:
  - puls.proxmox contributors (@puls-proxmox)
requirements:
  - enable in configuration
options:
  json_path:
    description:
      - >-
        Also write the summary as JSON to this file, for a CI gate. The file is written at the end of
        every run (also when no machine recorded a plan), so it never holds a previous run's plan.
      - >-
        Its keys: C(check_mode) (bool), C(git) (the commit the plan was made from, see below), C(machines) (list of
        C(kind), C(name), C(actions)), C(totals)
        (actions to counts, as in the printed total), C(failed) (hosts that failed or were unreachable)
        and C(nothing_to_do) (bool: every machine is C(ok) or C(orphan), which the run leaves alone, and none failed).
      - C(git) is null, unless the inventory source (the first given to C(-i) that lies in one) is in a Git work tree;
        then C(commit) (its C(HEAD)), C(dirty) (whether the work tree has uncommitted changes, untracked files
        included) and C(work_tree). The printed plan then begins with C(From commit COMMIT), followed by
        C((the work tree has uncommitted changes)) when it is dirty.
      - Not set means no file is written.
    type: path
    env:
      - name: PULS_PLAN_JSON
    ini:
      - section: puls_plan
        key: json_path
  history_dir:
    description:
      - >-
        Also keep the run history in this directory (made when missing): at the end of every run that recorded a plan,
        one JSON document more, named by the time the run finished and its mode
        (C(20261201T203000.000000Z-check.json) or C(...-apply.json)), and the status page rendered anew from the
        history (see O(status_page)). docs/gitops.md describes both.
      - >-
        A document holds C(format) (C(puls.proxmox.history/1)), C(started), C(finished) (UTC, ISO 8601), C(check_mode),
        C(outcome) (C(failed), C(in sync), C(drifted) or C(applied)), C(git) (as in the JSON of O(json_path)),
        C(machines) (C(kind), C(name), C(actions), C(state) - C(in sync), C(drifted), C(pending restart), C(failed),
        C(orphan) or C(removed) - and C(differences), each a C(field) with C(declared) and C(observed) when the run had
        C(--diff), or C(pending_restart)), C(totals), C(failed) and C(nothing_to_do).
      - Secrets never appear in it; the differences are those of the modules' diffs, where secrets are masked.
      - Not set means no history is kept.
    type: path
    env:
      - name: PULS_HISTORY_DIR
    ini:
      - section: puls_plan
        key: history_dir
  status_page:
    description:
      - >-
        The status page rendered from the history of O(history_dir) after each run: one self-contained HTML file (no
        script, no external asset) with every machine's state, the fields that differ and its last runs, and the runs
        with their commits, newest first (the last 200).
      - Default is C(index.html) in O(history_dir). Without O(history_dir) no page is written.
    type: path
    env:
      - name: PULS_STATUS_PAGE
    ini:
      - section: puls_plan
        key: status_page
"""

import datetime
import glob
import json
import os

from ansible import context
from ansible.plugins.callback import CallbackBase

# The plan words and the counted actions (in the order of the printed total) are defined once, for the role too.
from ansible_collections.puls.proxmox.plugins.module_utils import _history, _status_page
from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import COUNTED, KIND_ORDER, LEFT_ALONE, action_kind
from ansible_collections.puls.proxmox.plugins.plugin_utils._git_source import commit_line, git_source


def summarize(plans, failed_hosts):
    """The summary of a run: machines in a stable order (ISOs, templates, VMs, each by name) and totals."""
    machines = sorted(plans.values(), key=lambda p: (KIND_ORDER.index(p['kind']) if p['kind'] in KIND_ORDER else len(KIND_ORDER), p['kind'], p['name']))
    totals = dict.fromkeys(COUNTED, 0)
    for machine in machines:
        for kind in sorted({action_kind(action) for action in machine['actions']} - {'ok'}):
            totals[kind] = totals.get(kind, 0) + 1
    totals['ok'] = sum(1 for machine in machines if machine['actions'] == ['ok'])
    # An orphan is out of sync, but the run leaves it alone: it is no work to do.
    left_alone = sum(1 for machine in machines if machine['actions'] and set(map(action_kind, machine['actions'])) <= set(LEFT_ALONE))
    return {
        'machines': machines,
        'totals': totals,
        'failed': sorted(failed_hosts),
        'nothing_to_do': not failed_hosts and totals['ok'] + left_alone == len(machines),
    }


def render_lines(summary):
    """The human lines: one per machine, the failed hosts, and the total."""
    lines = ['{0}: {1}'.format(m['name'], ', '.join(m['actions'])) for m in summary['machines']]
    lines += [f'{host}: failed' for host in summary['failed']]
    counts = [f'{count} to {kind}' for kind, count in summary['totals'].items() if kind not in ('ok',) + LEFT_ALONE]
    counts.append('{0} ok'.format(summary['totals']['ok']))
    # Shown when there are any, as the failed hosts are: the total of a fleet without orphans reads as it always did.
    counts += ['{0} {1}'.format(summary['totals'][kind], kind) for kind in LEFT_ALONE if summary['totals'].get(kind)]
    if summary['failed']:
        counts.append('{0} failed'.format(len(summary['failed'])))
    lines.append(', '.join(counts))
    return lines


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'puls.proxmox.plan_summary'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._plans = {}
        self._differences = {}
        self._started = _now()

    def _collect(self, host, result):
        facts = result.get('ansible_facts') or {}
        if 'puls_plan' not in facts:
            return
        plan = facts['puls_plan']
        if not (isinstance(plan, dict) and isinstance(plan.get('actions'), list) and plan.get('actions') and plan.get('kind') and plan.get('name')):
            self._display.warning(
                f'puls.proxmox.plan_summary: host {host} set puls_plan without a kind, a name and a non-empty list of actions; it is left out of the summary'
            )
            return
        machine = {'kind': str(plan['kind']), 'name': str(plan['name']), 'actions': [str(a) for a in plan['actions']]}
        # A machine's latest record wins: a later play may record it again.
        self._plans[(machine['kind'], machine['name'])] = machine
        # Only the fields, the values of the modules' diffs (secrets masked there) and the restart flag, for the history.
        self._differences[(machine['kind'], machine['name'])] = [
            {key: entry[key] for key in ('field', 'declared', 'observed', 'pending_restart') if key in entry}
            for entry in plan.get('differences') or ()
            if isinstance(entry, dict) and entry.get('field')
        ]

    def v2_runner_on_ok(self, result):
        self._collect(result._host.get_name(), result._result)

    def v2_runner_item_on_ok(self, result):
        self._collect(result._host.get_name(), result._result)

    def v2_playbook_on_stats(self, stats):
        # The stats count only failures that stopped a host: rescued and ignored ones are not among them.
        failed_hosts = [host for host in stats.processed if stats.summarize(host)['failures'] or stats.summarize(host)['unreachable']]
        summary = summarize(self._plans, failed_hosts)
        summary['check_mode'] = bool(context.CLIARGS.get('check'))
        summary['git'] = git_source(context.CLIARGS.get('inventory'))
        json_path = self.get_option('json_path')
        if json_path:
            with open(json_path, 'w', encoding='utf-8') as out:
                json.dump({key: summary[key] for key in ('check_mode', 'git', 'machines', 'totals', 'failed', 'nothing_to_do')}, out, indent=2)
                out.write('\n')
        if not summary['machines'] and not summary['failed']:
            return
        self._display.banner('Plan (check mode: nothing was changed)' if summary['check_mode'] else 'Summary (real run)')
        for line in [commit_line(summary['git'])] * bool(summary['git']) + render_lines(summary):
            self._display.display(line)
        self._display.display('')
        if self.get_option('history_dir'):
            self._keep_history(summary)

    def _keep_history(self, summary):
        """Add this run's document to the history, and render the status page from the history."""
        directory = self.get_option('history_dir')
        finished = _now()
        document = _history.run_document(summary, self._started, finished, self._differences)
        os.makedirs(directory, exist_ok=True)
        name = '{0}-{1}.json'.format(finished.replace('-', '').replace(':', ''), 'check' if summary['check_mode'] else 'apply')
        _write(os.path.join(directory, name), json.dumps(document, indent=2) + '\n')
        history = []
        for path in sorted(glob.glob(os.path.join(directory, '*.json')))[-HISTORY_ON_PAGE:]:
            try:
                with open(path, encoding='utf-8') as source:
                    loaded = json.load(source)
            except (OSError, ValueError) as exc:
                self._display.warning(f'puls.proxmox.plan_summary: {path} is left out of the status page: {exc}')
                continue
            if isinstance(loaded, dict) and loaded.get('format') == _history.FORMAT:
                history.append(loaded)
        page = self.get_option('status_page') or os.path.join(directory, 'index.html')
        _write(page, _status_page.render(history))
        self._display.display(f'Status page: {os.path.abspath(page)}')


HISTORY_ON_PAGE = 200


def _now():
    return datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ')


def _write(path, text):
    """Write the whole file or nothing: a reader (a web server, a browser) never sees half a page."""
    temporary = f'{path}.{os.getpid()}.tmp'
    with open(temporary, 'w', encoding='utf-8') as out:
        out.write(text)
    os.replace(temporary, path)
