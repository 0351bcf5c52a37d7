#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: wait_cloud_init
short_description: Wait for cloud-init to finish on a machine, showing the time elapsed
version_added: 0.1.0
description:
  - >-
    Runs C(timeout TIMEOUT cloud-init status --wait) on the host over its connection, as M(ansible.builtin.raw) runs a
    command (the host needs no Python), and meanwhile shows a progress line every C(pve_progress_interval) seconds:
    what is waited for and the time elapsed, as the progress of C(puls.proxmox.pve_vm)'s waits. The variables
    C(pve_progress) (V(auto): when the output is a terminal; V(true); V(false)) and C(pve_progress_interval) (seconds,
    5) set it; see the puls.proxmox.reconcile role.
  - >-
    It returns the command's exit status and output and never fails on them, so that the task that follows decides:
    0 when cloud-init is done, 1 on an error, 2 when done with recoverable errors (cloud-init's C(status --wait)),
    124 when it did not finish within O(timeout) seconds (C(timeout)), 127 when the host has no cloud-init.
  - The role puls.proxmox.reconcile waits with it before the first provision file of a machine.
  - The task never changes anything.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.action
attributes:
  check_mode:
    support: full
    details: It only asks cloud-init, so it asks in check mode too.
  diff_mode:
    support: none
  action:
    support: full
    details: Runs the command over the host's connection from the controller, where it shows the progress lines.
options:
  timeout:
    description:
      - Seconds to wait at most, on the host.
    type: int
    default: 900
'''

EXAMPLES = r'''
- name: Wait for cloud-init to finish
  puls.proxmox.wait_cloud_init:
    timeout: 900
  register: cloud_init

- name: Stop when cloud-init reported an error
  ansible.builtin.fail:
    msg: "cloud-init reported an error: {{ cloud_init.stdout_lines | join(' ') }}"
  when: cloud_init.rc in [1, 2]
'''

RETURN = r'''
rc:
  description: The exit status of C(timeout TIMEOUT cloud-init status --wait).
  returned: always
  type: int
  sample: 0
stdout:
  description: Its output.
  returned: always
  type: str
  sample: "status: done\n"
stdout_lines:
  description: Its output, by line.
  returned: always
  type: list
  elements: str
  sample: ["status: done"]
stderr:
  description: Its error output (over SSH, often empty).
  returned: always
  type: str
  sample: ""
stderr_lines:
  description: Its error output, by line.
  returned: always
  type: list
  elements: str
  sample: []
'''
