# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""hacking/role_stats.py counts what a role computes for itself, on a role small enough to count by hand."""

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / 'hacking' / 'role_stats.py'

TASKS = """\
- name: Decide
  ansible.builtin.set_fact:
    pick: "{{ 'a' if first else 'b' }}"
- name: Work
  when:
    - pick == 'a'
    - enabled
  block:
    - name: Step
      ansible.builtin.include_tasks: step.yml
      register: step_result
- name: Other
  ansible.builtin.debug:
    msg: done
  when: pick == 'b' or forced
"""


def test_a_small_role_is_counted_as_by_hand(tmp_path):
    role = tmp_path / 'role'
    for folder, text in {
        'tasks': TASKS,
        'vars': "derived: \"{{ enabled | bool }}\"\n",
        'defaults': 'enabled: true\n',
        'meta': 'argument_specs:\n  main:\n    options:\n      enabled: {type: bool}\n',
    }.items():
        (role / folder).mkdir(parents=True)
        (role / folder / ('argument_specs.yml' if folder == 'meta' else 'main.yml')).write_text(text)
    output = subprocess.run([sys.executable, str(SCRIPT), str(role)], check=True, capture_output=True, text=True).stdout
    counts = dict(line.split(': ') for line in output.splitlines())
    # Jinja: the set_fact's expression, the vars' one and the three bare conditions (two of Work, one of Other).
    assert counts == {
        'tasks': '4',
        'when': '2',
        'when_compound': '2',
        'set_fact': '1',
        'includes': '1',
        'jinja': '5',
        'inline_if': '1',
        'internal_vars': '3',
    }
