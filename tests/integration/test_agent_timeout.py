# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The guest-agent wait of pve_vm is bounded by agent_timeout, through a real ansible-playbook run against the lab.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_agent_timeout.py
"""

from __future__ import annotations

import time

import pytest
from polling import wait_until
from pve_vm_plays import TASK, inventory, sent, vm_env, vm_named, vm_play

from playbooks import run_playbook

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
    # The VM has been up longer than agent_timeout (PVE's uptime, whole seconds of its QEMU process): the wait is over
    # at once, so the agent is asked once, not retried. On a loaded machine the next run can begin within that second.
    assert wait_until(lambda: time.time() - vm.started_at >= 2)
    asked = len(sent(lab, 'GET', AGENT))
    run = run_playbook(tmp_path, vm_play(), env, inventory({'hung-agent': dict(vms['hung-agent'], agent_timeout=1)}), name='wait')
    result = run.one(TASK, 'hung-agent')
    assert run.rc == 0 and result['address'] is None and not result['changed']
    [warning] = result['warnings']
    assert 'guest agent reported none' in warning and 'got timeout' in warning, warning
    assert 'qemu-guest-agent is installed and running' in warning
    assert len(sent(lab, 'GET', AGENT)) - asked == 1


@pytest.mark.lab(time_scale=0.01)
def test_a_token_that_may_not_read_the_agent_is_told_which_privilege_at_once(lab, tmp_path):
    from test_least_privilege import SECRET, TOKEN, USER, documented_grants

    grants = documented_grants()
    grants['/vms'] = grants['/vms'] - {'VM.GuestAgent.Audit'}
    lab.call(lambda: lab.pve.add_api_token(USER, TOKEN, SECRET, grants))
    env = vm_env(lab, tmp_path, PROXMOX_USER=USER, PROXMOX_TOKEN_NAME=TOKEN, PROXMOX_TOKEN_SECRET=SECRET)
    vms = {'dhcp-web': {'image': TEMPLATE, 'state': 'started', 'agent_timeout': 600}}
    run = run_playbook(tmp_path, vm_play(), env, inventory(vms))
    result = run.one(TASK, 'dhcp-web')
    assert run.rc == 0 and result['address'] is None
    [warning] = result['warnings']
    assert 'Permission check failed (/vms/{0}, VM.GuestAgent.Audit|VM.GuestAgent.Unrestricted); grant'.format(result['vmid']) in warning, warning
    assert 'grant VM.GuestAgent.Audit (PVE 9) or VM.Monitor (PVE 8) on /vms/{0}'.format(result['vmid']) in warning
    # Refused once: not asked again for the 600 s the agent would be waited for.
    assert len(sent(lab, 'GET', AGENT)) == 1
