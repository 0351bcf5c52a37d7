# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_lease on the controller: runs the module and, while it waits for a lease another run holds, shows what it waits
for, the run that holds it and the time elapsed (plugin_utils/_progress_action.py)."""

from __future__ import annotations

from ansible_collections.puls.proxmox.plugins.plugin_utils._progress_action import ProgressAction


class ActionModule(ProgressAction):
    pass
