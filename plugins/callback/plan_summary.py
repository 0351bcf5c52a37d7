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
    C(provision FILE, FILE), C(replace OLD), C(destroy), C(prune), or C(ok) alone when nothing is to be done.
    A total counts machines, so a machine with two files to run counts once in C(to provision).
  - >-
    A check run (C(--check)) is the plan and is headed "Plan (check mode: nothing was changed)";
    a real run is headed "Summary (real run)".
  - >-
    Hosts that failed or were unreachable in the run are listed as C(HOST: failed) and counted in the total.
  - >-
    The machines' actions come from the fact C(puls_plan) (C(kind), C(name), C(actions)) that the
    role sets for each machine in its task C(Record the plan). Nothing else of a task's result is read,
    so nothing else (no secret) is printed.
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
        Its keys: C(check_mode) (bool), C(machines) (list of C(kind), C(name), C(actions)), C(totals)
        (actions to counts, as in the printed total), C(failed) (hosts that failed or were unreachable)
        and C(nothing_to_do) (bool: every machine is C(ok) and none failed).
      - Not set means no file is written.
    type: path
    env:
      - name: PULS_PLAN_JSON
    ini:
      - section: puls_plan
        key: json_path
"""

import json

from ansible import context
from ansible.plugins.callback import CallbackBase

# The plan words and the counted actions (in the order of the printed total) are defined once, for the role too.
from ansible_collections.puls.proxmox.plugins.module_utils._plan_words import COUNTED, KIND_ORDER, action_kind


def summarize(plans, failed_hosts):
    """The summary of a run: machines in a stable order (ISOs, templates, VMs, each by name) and totals."""
    machines = sorted(plans.values(), key=lambda p: (KIND_ORDER.index(p['kind']) if p['kind'] in KIND_ORDER
                                                     else len(KIND_ORDER), p['kind'], p['name']))
    totals = dict.fromkeys(COUNTED, 0)
    for machine in machines:
        for kind in sorted({action_kind(action) for action in machine['actions']} - {'ok'}):
            totals[kind] = totals.get(kind, 0) + 1
    totals['ok'] = sum(1 for machine in machines if machine['actions'] == ['ok'])
    return {
        'machines': machines,
        'totals': totals,
        'failed': sorted(failed_hosts),
        'nothing_to_do': not failed_hosts and totals['ok'] == len(machines),
    }


def render_lines(summary):
    """The human lines: one per machine, the failed hosts, and the total."""
    lines = ['{0}: {1}'.format(m['name'], ', '.join(m['actions'])) for m in summary['machines']]
    lines += ['{0}: failed'.format(host) for host in summary['failed']]
    counts = ['{0} to {1}'.format(count, kind) for kind, count in summary['totals'].items() if kind != 'ok']
    counts.append('{0} ok'.format(summary['totals']['ok']))
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

    def _collect(self, host, result):
        facts = result.get('ansible_facts') or {}
        if 'puls_plan' not in facts:
            return
        plan = facts['puls_plan']
        if not (isinstance(plan, dict) and isinstance(plan.get('actions'), list) and plan.get('actions')
                and plan.get('kind') and plan.get('name')):
            self._display.warning('puls.proxmox.plan_summary: host {0} set puls_plan without a kind, a name and a '
                                  'non-empty list of actions; it is left out of the summary'.format(host))
            return
        machine = {'kind': str(plan['kind']), 'name': str(plan['name']), 'actions': [str(a) for a in plan['actions']]}
        # A machine's latest record wins: a later play may record it again.
        self._plans[(machine['kind'], machine['name'])] = machine

    def v2_runner_on_ok(self, result):
        self._collect(result._host.get_name(), result._result)

    def v2_runner_item_on_ok(self, result):
        self._collect(result._host.get_name(), result._result)

    def v2_playbook_on_stats(self, stats):
        # The stats count only failures that stopped a host: rescued and ignored ones are not among them.
        failed_hosts = [host for host in stats.processed
                        if stats.summarize(host)['failures'] or stats.summarize(host)['unreachable']]
        summary = summarize(self._plans, failed_hosts)
        summary['check_mode'] = bool(context.CLIARGS.get('check'))
        json_path = self.get_option('json_path')
        if json_path:
            with open(json_path, 'w', encoding='utf-8') as out:
                json.dump({key: summary[key] for key in ('check_mode', 'machines', 'totals', 'failed', 'nothing_to_do')},
                          out, indent=2)
                out.write('\n')
        if not summary['machines'] and not summary['failed']:
            return
        self._display.banner('Plan (check mode: nothing was changed)' if summary['check_mode'] else 'Summary (real run)')
        for line in render_lines(summary):
            self._display.display(line)
        self._display.display('')
