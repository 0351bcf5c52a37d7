# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Molecule's `test` sequence of the reconcile role (extensions/molecule/default) against the lab, run as a
developer runs it: `molecule test` from extensions/, offline, in a network namespace of its own."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from integration.playbooks import REPO

BIN = Path(sys.executable).parent


def test_molecule_converges_the_role_idempotently_and_verifies_the_machine(tmp_path):
    ephemeral = tmp_path / 'molecule'
    env = dict(
        os.environ,
        PATH='{0}:{1}'.format(BIN, os.environ['PATH']),
        NO_COLOR='1',
        ANSIBLE_NOCOLOR='1',
        MOLECULE_EPHEMERAL_DIRECTORY=str(ephemeral),
        ANSIBLE_HOME=str(tmp_path / 'ansible-home'),
    )
    # Its own namespace: the scenario's lab binds make lab's fixed block 127.77.0.x, which other tests use too.
    run = subprocess.run(
        [str(REPO / 'hacking' / 'netns-run'), str(BIN / 'molecule'), 'test'],
        cwd=REPO / 'extensions',
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    succeeded = re.findall(r'^default \S+ (\w+): Executed: Successful$', run.stderr, re.MULTILINE)
    assert succeeded == ['destroy', 'syntax', 'create', 'converge', 'idempotence', 'verify', 'destroy'], output
    # The converge created and provisioned the machine; verify then read it through the API and over SSH.
    assert 'changed: [molecule1 -> localhost]' in output
    for check in ('Check that it is one running VM with the declared tags', 'Check its hardware, address and provision record', 'Check the mark'):
        assert f'TASK [{check}]' in output, output
    # destroy.yml stopped the lab it started.
    assert not (ephemeral / 'lab.pid').exists()
