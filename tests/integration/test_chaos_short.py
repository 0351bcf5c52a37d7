# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The short version of make chaos (three rounds of faults on the small fleet, a fixed seed; docs/reliability.md),
and the lab's fault driver it stands on."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import lab_vms
import pytest
from lab import faults

from playbooks import REPO

SEED = 11
ROUNDS = 3


def test_three_rounds_of_faults_break_no_invariant_and_the_fleet_converges_after_them(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / 'tests' / 'chaos' / 'campaign.py'),
            '--rounds',
            str(ROUNDS),
            '--seed',
            str(SEED),
            '--fleet',
            'small',
            '--results',
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    result = json.loads((tmp_path / f'campaign-{SEED}.json').read_text())
    report = done.stdout + done.stderr
    assert result['rounds'] == ROUNDS and sum(result['faults_injected'].values()) >= ROUNDS, report
    assert result['violations'] == [], report
    assert result['final_convergence']['holds'], report
    assert done.returncode == 0, report


def lab_state(lab):
    """What the faults change: quorum, network, locks, pending task errors, guest knobs, shutdown times."""
    pve = lab.pve
    return lab.call(
        lambda: {
            'quorate': pve.quorate,
            'drop_rate': pve.network['drop_rate'],
            'hang_rate': pve.network['hang_rate'],
            'locks': sorted((vm.lock or '', vm.lock_holder or '') for vm in pve.vms if not vm.template),
            'task_errors': sorted(pve.failures),
            'new_guest_knobs': sorted(lab.guests.new_guest_knobs),
            'shutdown_secs': sorted({vm.shutdown_secs for vm in pve.vms if not vm.template}),
        }
    )


@pytest.mark.lab(time_scale=0.05)
def test_the_fault_driver_applies_every_kind_and_stop_undoes_each(lab):
    api = lab_vms.client(lab)
    for vmid in (120, 121):
        lab_vms.clone(api, vmid, f'target{vmid}')
    calm = lab_state(lab)
    assert faults.FaultDriver(lab, 5).plan(6, 20) == faults.FaultDriver(lab, 5).plan(6, 20)

    driver = faults.FaultDriver(lab, 5)
    driver.start([faults.Fault(kind, at=0.0, secs=120.0, pick=0.0, variant=0) for kind in faults.KINDS])
    deadline = time.monotonic() + 30
    while sum(driver.injected.values()) < len(faults.KINDS) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert driver.injected == dict.fromkeys(faults.KINDS, 1) and not driver.skipped
    assert lab_state(lab) == {
        'quorate': False,
        'drop_rate': faults.DROP_RATE,
        'hang_rate': faults.HANG_RATE,
        # One VM's config lock held by another task, the other VM under a vzdump.
        'locks': [('', 'scenario'), ('backup', '')],
        'task_errors': [('POST', '/status/start')],
        'new_guest_knobs': ['cloud_init_delay', 'ssh_delay', 'ssh_listen_delay'],
        'shutdown_secs': [faults.SLOW_SHUTDOWN_SECS],
    }

    driver.stop()
    assert lab_state(lab) == calm
