# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GitOps without a daemon (docs/gitops.md), through ansible-playbook puls.proxmox.site against the lab: orphans in the
plan, the commit the plan was made from, adoption from the inventory, the run history and its status page.

Run inside a network namespace: hacking/netns-run .venv/bin/python -m pytest tests/integration/test_gitops.py -p no:xdist
"""

from __future__ import annotations

import lab_vms
from test_plan_equals_run import fleet, machines, printed_plan, site, why

STOPPED = dict(pve_image=str(lab_vms.TEMPLATE), pve_power='stopped')


def names(lab):
    return {entry['name'] for entry in lab_vms.client(lab).cluster_vms()}


def test_an_owned_vm_no_longer_declared_is_an_orphan_left_alone_with_prune_off_and_pruned_with_it_on(lab, tmp_path):
    made = site(lab, tmp_path, fleet(lab, tmp_path, {}, {'keep1': dict(STOPPED), 'gone1': dict(STOPPED)}), 'made')
    assert made.rc == 0, why(made)

    inventory = fleet(lab, tmp_path, {}, {'keep1': dict(STOPPED)})
    writes = len(lab.writes())
    for name, check in (('orphan-plan', True), ('orphan-run', False)):
        run = site(lab, tmp_path, inventory, name, check=check)
        assert run.rc == 0, why(run)
        assert machines(run.plan) == {('vm', 'gone1'): ['orphan'], ('vm', 'keep1'): ['ok']}
        assert (run.plan['totals']['orphan'], run.plan['totals']['prune'], run.plan['nothing_to_do']) == (1, 0, True)
        header = 'Plan (check mode: nothing was changed)' if check else 'Summary (real run)'
        lines = printed_plan(run, header)
        assert 'gone1: orphan' in lines and lines[-1].endswith(', 1 ok, 1 orphan'), lines
    # Left alone: nothing written, gone1 still there.
    assert len(lab.writes()) == writes and 'gone1' in names(lab)

    inventory['all']['vars']['pve_prune'] = True
    planned = site(lab, tmp_path, inventory, 'prune-plan', check=True)
    pruned = site(lab, tmp_path, inventory, 'prune')
    assert planned.rc == pruned.rc == 0, why(planned, pruned)
    assert machines(planned.plan) == machines(pruned.plan) == {('vm', 'gone1'): ['prune'], ('vm', 'keep1'): ['ok']}
    assert (pruned.plan['totals']['orphan'], pruned.plan['totals']['prune']) == (0, 1)
    assert 'gone1' not in names(lab) and 'keep1' in names(lab)
