# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: writes every task result of a playbook run as JSON lines, so a test can
assert on each host's result (changed, diff, return values, failure message) without parsing
human output. Enabled by the integration tests through ANSIBLE_CALLBACKS_ENABLED."""

from __future__ import annotations

DOCUMENTATION = r"""
name: record_results
type: aggregate
short_description: write task results as JSON lines for the integration tests
description: Appends one JSON object per task result to the file named by PULS_TEST_RESULTS.
options: {}
"""

import json
import os

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'record_results'
    CALLBACK_NEEDS_ENABLED = True

    def _write(self, result, status):
        path = os.environ.get('PULS_TEST_RESULTS')
        if not path:
            return
        record = {
            'host': result._host.get_name(),
            'task': result._task.get_name(),
            'action': result._task.action,
            'status': status,
            'result': {k: v for k, v in result._result.items() if not k.startswith('_ansible')},
        }
        with open(path, 'a', encoding='utf-8') as out:
            out.write(json.dumps(record, default=str) + '\n')

    def v2_runner_on_ok(self, result):
        self._write(result, 'ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._write(result, 'failed')

    def v2_runner_on_skipped(self, result):
        self._write(result, 'skipped')

    def v2_runner_on_unreachable(self, result):
        self._write(result, 'unreachable')
