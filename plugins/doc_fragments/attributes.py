# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment:
    """What the attributes of the collection's modules mean; each module says how far it supports them."""

    DOCUMENTATION = r'''
options: {}
attributes:
  check_mode:
    description: Can run in check mode and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check mode), when in diff mode.
'''

    # The modules with an action plugin, which runs part of their work on the controller.
    ACTION = r'''
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
'''

    # The modules whose action plugin shows the progress of their waits (plugin_utils/_progress_action.py).
    PROGRESS = r'''
options: {}
attributes:
  action:
    description: Indicates this has a corresponding action plugin so some parts of the options can be executed on the controller.
    support: full
    details:
      - >-
        The action plugin runs the module and, while it waits for a Proxmox VE task or a VM's lock, shows progress lines
        (what is waited for, the time elapsed, the percentage and rate a download's or clone's task log reports) and
        reports a stalled download or clone with its UPID, as a warning. The variables C(pve_progress) (V(auto): when
        the output is a terminal; V(true); V(false)), C(pve_progress_interval) (seconds, 5) and C(pve_progress_stall)
        (seconds, 120) set it; see the puls.proxmox.reconcile role. Progress needs the module to run on the controller
        (C(delegate_to: localhost) or C(connection: local)); elsewhere the module runs without it.
'''
