# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""warn: show a message through Ansible's warning channel, where callbacks (and AWX) count it."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        _validation, params = self.validate_argument_spec(argument_spec={'msg': {'type': 'str', 'required': True}})
        result.update(changed=False, msg=params['msg'], warnings=[params['msg']])
        return result
