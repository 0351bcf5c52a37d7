# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r'''
name: path_prefixes
short_description: Each step of a path with the steps before it, the items of a looped include that keeps their order
version_added: 0.1.0
author:
  - puls.proxmox contributors (@puls-proxmox)
description:
  - For a list of steps, the list of its prefixes, shortest first - V([a, b, c]) gives V([[a], [a, b], [a, b, c]]).
  - The C(puls.proxmox.reconcile) role includes each machine's task files in a loop over these prefixes, the file being
    the last step of each item. Ansible runs the include that several hosts made with the same item as one, so that its
    tasks run on all of them in parallel, placed where the first of them made it (ansible-core's
    C(IncludedFile.process_include_results)). With each item the path up to its file, two hosts share an include only
    when everything before it is the same too, so no host's files run out of their order.
options:
  _input:
    description: The steps, in order.
    type: list
    elements: str
    required: true
'''

EXAMPLES = r'''
- name: Take the machine's steps
  ansible.builtin.include_tasks:
    file: "{{ step | last }}.yml"
  loop: "{{ ['vm', 'guest_provision'] | puls.proxmox.path_prefixes }}"
  loop_control:
    loop_var: step
'''

RETURN = r'''
_value:
  description: The prefixes of the input, shortest first; empty for an empty input.
  type: list
  elements: list
'''


def path_prefixes(steps):
    """See DOCUMENTATION."""
    steps = list(steps)
    return [steps[:length] for length in range(1, len(steps) + 1)]


class FilterModule:
    def filters(self):
        return {'path_prefixes': path_prefixes}
