#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: warn
short_description: Show a message as an Ansible warning
version_added: 0.1.0
description:
  - >-
    Shows O(msg) through Ansible's warning channel: as C([WARNING]) in the terminal, and as a warning of the task's
    result, which callbacks and AWX count. For a condition the run goes on after, but that someone should look at;
    C(ansible.builtin.debug) prints a message no callback can tell from any other.
  - The role puls.proxmox.reconcile uses it for cloud-init errors, protected machines it keeps, and guests it does not prune.
  - The task never changes anything and never fails.
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.action
attributes:
  check_mode:
    support: full
    details: Warns in check mode too.
  diff_mode:
    support: none
  action:
    support: full
    details: Runs on the controller only; nothing runs on the host.
options:
  msg:
    description:
      - The warning.
    type: str
    required: true
'''

EXAMPLES = r'''
- name: Warn about a condition the run goes on after
  puls.proxmox.warn:
    msg: "cloud-init on {{ inventory_hostname }} reported an error; provisioning goes on"
  when: cloud_init_status.rc == 1
'''

RETURN = r'''
msg:
  description: The warning shown.
  returned: always
  type: str
  sample: cloud-init on web1 reported an error; provisioning goes on
'''
