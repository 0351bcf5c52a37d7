# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""wait_cloud_init: `cloud-init status --wait` on the host over its connection, as ansible.builtin.raw runs a command
(no Python needed on the host), with a progress line of the time elapsed meanwhile."""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require
from ansible_collections.puls.proxmox.plugins.plugin_utils._progress_action import wait_showing


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    # It only asks, so it asks in check mode too.
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        _validation, params = self.validate_argument_spec(argument_spec={'timeout': {'type': 'int', 'default': 900}})
        # `timeout` bounds the wait on the host itself, so a wait that outlives it ends there too (exit status 124).
        command = 'timeout %d cloud-init status --wait' % params['timeout']
        ran = wait_showing(self._templar, task_vars, 'waiting for cloud-init to finish', lambda: self._low_level_execute_command(command))
        # The exit status is the answer, for the next task to read: failed is said, or Ansible fails a result whose
        # rc is not 0 (TaskExecutor._execute).
        result.update(
            changed=False,
            failed=False,
            rc=ran['rc'],
            stdout=ran['stdout'],
            stdout_lines=ran['stdout'].splitlines(),
            stderr=ran['stderr'],
            stderr_lines=ran['stderr'].splitlines(),
        )
        return result
