#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: wait_ssh
short_description: Wait for a machine's SSH port, showing the time elapsed
version_added: 0.1.0
description:
  - >-
    Waits until O(host) accepts TCP connections on O(port), as M(ansible.builtin.wait_for) does (it runs it), and
    meanwhile shows a progress line every C(pve_progress_interval) seconds: what is waited for and the time elapsed,
    as the progress of C(puls.proxmox.pve_vm)'s waits. The variables C(pve_progress) (V(auto): when the output is a
    terminal; V(true); V(false)) and C(pve_progress_interval) (seconds, 5) set it; see the puls.proxmox.reconcile role.
  - The role puls.proxmox.reconcile waits with it before provisioning a machine and before generalizing a build VM.
  - The task never changes anything. It fails when the port does not answer within O(timeout) seconds.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.action
attributes:
  check_mode:
    support: none
    details: >-
      As M(ansible.builtin.wait_for), it is skipped in check mode; set C(check_mode: false) on the task to wait in a
      check run too, as the role does.
  diff_mode:
    support: none
  action:
    support: full
    details: >-
      The progress lines are shown on the controller; the wait runs where the task runs (C(delegate_to: localhost)
      waits from the controller).
options:
  host:
    description:
      - The address or name of the machine.
    type: str
    required: true
  port:
    description:
      - The SSH port.
    type: int
    default: 22
  timeout:
    description:
      - Seconds to wait at most.
    type: int
    default: 300
  msg:
    description:
      - The failure message when the port did not answer in time (M(ansible.builtin.wait_for)'s own by default).
    type: str
'''

EXAMPLES = r'''
- name: Wait for the SSH port of the machine
  puls.proxmox.wait_ssh:
    host: "{{ ansible_host }}"
    timeout: 300
    msg: "{{ ansible_host }} did not answer on port 22 within 300 s"
  delegate_to: localhost
  vars:
    pve_progress: true
'''

RETURN = r'''
elapsed:
  description: Seconds waited (M(ansible.builtin.wait_for)'s result).
  returned: always
  type: int
  sample: 23
'''
