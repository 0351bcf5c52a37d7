#!/usr/bin/python
# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
module: fleet_vars
short_description: Validate the variables of many hosts and build their machines' options in one task
version_added: 0.1.0
description:
  - >-
    For each host of O(hosts), computes its variables as a task of this play and role on that host would see them,
    and validates them against the calling role's argument spec (C(meta/argument_specs.yml), entry point
    O(entry_point)) with the validator of M(ansible.builtin.validate_argument_spec). Then builds, for each valid host
    of O(gather_hosts), what P(puls.proxmox.pve_fleet_info#module) plans that machine with, from its validated role
    variables (the C(pve_*) variables of the role puls.proxmox.reconcile).
  - >-
    It does in the controller's own process, in one task, what Ansible's own role validation and a C(set_fact) do
    with a worker process per host: the role puls.proxmox.reconcile runs it with C(run_once) so that a machine that
    needs nothing costs no task of its own (docs/performance.md). Each host's errors are returned under its name.
  - >-
    The options are built by the code the role's own variables use (the lookup P(puls.proxmox.vm_options#lookup)),
    from the values as validated, so that a host's role variables are each templated once.
  - The task never changes anything, and does not fail on invalid variables; the caller decides (see RV(errors)).
author:
  - puls.proxmox contributors (@puls-proxmox)
extends_documentation_fragment:
  - puls.proxmox.attributes
  - puls.proxmox.attributes.action
attributes:
  check_mode:
    support: full
    details: Reads only.
  diff_mode:
    support: none
  action:
    support: full
    details: Runs on the controller only; nothing runs on the hosts.
options:
  hosts:
    description:
      - The hosts whose variables to validate, usually C(ansible_play_hosts).
    type: list
    elements: str
    required: true
  entry_point:
    description:
      - The entry point of the role's argument spec to validate against.
    type: str
    default: main
  gather_hosts:
    description:
      - The hosts among O(hosts) whose machines to build (RV(hosts)); the others are only validated.
    type: list
    elements: str
    default: []
  template_hosts:
    description:
      - The hosts among O(hosts), templates, whose machines to build apart (RV(templates)), for the checks of what their
        builds are made from (an image, a CD-ROM ISO, an OS template); the others are only validated.
    type: list
    elements: str
    default: []
notes:
  - Run it from a task of the role whose variables it validates (it finds the argument spec by C(role_path)), with
    C(run_once), and with C(no_log), as the machines' options hold their secrets (C(ci_password), C(user_data), a
    container's password).
'''

EXAMPLES = r'''
# In a task of a role with meta/argument_specs.yml.
- name: Validate every host's variables and build each machine's options
  puls.proxmox.fleet_vars:
    hosts: "{{ ansible_play_hosts }}"
    gather_hosts: "{{ groups['pve_vms'] | intersect(ansible_play_hosts) }}"
  run_once: true
  no_log: true
  register: fleet

- name: Stop when a host's variables are invalid
  ansible.builtin.assert:
    that: fleet.errors | length == 0
    fail_msg: "{{ fleet.errors }}"
  run_once: true
'''

RETURN = r'''
errors:
  description: Each host with invalid variables, and what is wrong with them (the messages name the variable).
  returned: always
  type: dict
  sample: {"web1": ["argument 'pve_cores' is of type str and we were unable to convert to int: ..."]}
hosts:
  description:
    - Each valid host of O(gather_hosts), and its machine as P(puls.proxmox.pve_fleet_info#module) takes it
      (its O(puls.proxmox.pve_fleet_info#module:machines)) - C(host), C(type) (V(qemu) or V(lxc)), C(vm) (the options of
      M(puls.proxmox.pve_vm) or M(puls.proxmox.pve_container)), C(provision) (those of M(puls.proxmox.pve_notes_hash))
      and C(replace) (C(pve_replace)).
  returned: always
  type: dict
  sample: {"web1": {"host": "web1", "type": "qemu", "vm": {"name": "web1", "cores": 2}, "provision": {"files": []}, "replace": ""}}
templates:
  description: Each valid host of O(template_hosts), and its machine, as RV(hosts) has them.
  returned: always
  type: dict
  sample: {"ct-golden": {"host": "ct-golden", "type": "lxc", "vm": {"image": "debian-12-standard"}, "provision": {"files": []}, "replace": ""}}
'''
