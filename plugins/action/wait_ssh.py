# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wait_ssh: ansible.builtin.wait_for on a guest's SSH port, with a progress line of the time elapsed meanwhile."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require
from ansible_collections.puls.proxmox.plugins.plugin_utils._in_worker import execute_module
from ansible_collections.puls.proxmox.plugins.plugin_utils._progress_action import wait_showing

ARGUMENTS = {
    'host': {'type': 'str', 'required': True},
    'port': {'type': 'int', 'default': 22},
    'timeout': {'type': 'int', 'default': 300},
    'msg': {'type': 'str'},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        _validation, params = self.validate_argument_spec(argument_spec=ARGUMENTS)
        wait_args = {name: value for name, value in params.items() if value is not None}
        result.update(
            wait_showing(
                self._templar,
                task_vars,
                'waiting for SSH port %d of %s' % (params['port'], params['host']),
                lambda: execute_module(self, task_vars, 'ansible.builtin.wait_for', wait_args),
            )
        )
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
