# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guest-agent wait of pve_vm is bounded by agent_timeout, through a real ansible-playbook run against the lab.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_agent_timeout.py
"""

from __future__ import annotations

import pytest
from playbooks import run_playbook
from pve_vm_plays import TASK, inventory, sent, vm_env, vm_named, vm_play

TEMPLATE = 9017
AGENT = '/agent/network-get-interfaces'


@pytest.mark.lab(time_scale=0.01)
def test_a_short_agent_timeout_ends_the_wait_on_a_hung_agent_with_a_warning_saying_why(lab, tmp_path):
    env = vm_env(lab, tmp_path)
    vms = {'hung-agent': {'image': TEMPLATE, 'state': 'started'}}
    assert run_playbook(tmp_path, vm_play(), env, inventory(vms), name='create').rc == 0
    vm = vm_named(lab, 'hung-agent')

    def hang():
        vm.agent_hangs = True  # the agent takes commands and never answers: PVE's QMP call ends in "got timeout"
    lab.call(hang)
    asked = len(sent(lab, 'GET', AGENT))
    # The VM has been up longer than agent_timeout: the wait is over at once, so the agent is asked once, not retried.
    run = run_playbook(tmp_path, vm_play(), env, inventory({'hung-agent': dict(vms['hung-agent'], agent_timeout=1)}), name='wait')
    result = run.one(TASK, 'hung-agent')
    assert run.rc == 0 and result['address'] is None and not result['changed']
    [warning] = result['warnings']
    assert 'guest agent reported none' in warning and 'got timeout' in warning, warning
    assert 'qemu-guest-agent is installed and running' in warning
    assert len(sent(lab, 'GET', AGENT)) - asked == 1
