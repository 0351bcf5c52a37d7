# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action plugin of a module that waits for PVE: runs the module and, meanwhile, shows what it waits for.

The module notes each wait in a file (module_utils/_progress.py); this action reads it every half second and shows
the progress lines of _progress.ProgressWatch through Ansible's display, which prints them in the terminal and in
AWX's job output. Stall reports become warnings of the task's result too, so callbacks count them.

Variables (inventory or play), read by the action on the controller:
- pve_progress: V(auto) (default) shows progress when ansible-playbook's output is a terminal (known on a Linux
  controller); V(true) always (AWX, CI logs); V(false) never.
- pve_progress_interval: seconds between two progress lines of one wait (default 5).
- pve_progress_stall: seconds without a new line in a download's or clone's PVE task log after which it is reported
  as stalled (default 120).
Progress needs the module to run on the controller (C(delegate_to: localhost), as the role runs it), where the
action can read the notes; elsewhere the module runs without.

A wait with no PVE task behind it (a guest's SSH port, its cloud-init) is shown by its action with wait_showing: what
is waited for and the time elapsed, every interval, read from the same variables.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display
from ansible.utils.vars import merge_hash

from ansible_collections.puls.proxmox.plugins.module_utils._progress import ENV
from ansible_collections.puls.proxmox.plugins.plugin_utils._ansible_core import require
from ansible_collections.puls.proxmox.plugins.plugin_utils._in_worker import execute_module
from ansible_collections.puls.proxmox.plugins.plugin_utils._progress import DEFAULT_INTERVAL, DEFAULT_STALL, ProgressWatch

display = Display()
# Seconds between two reads of the notes.
READ_EVERY = 0.5
SWITCHES = {'auto': None, 'true': True, 'yes': True, 'on': True, '1': True, 'false': False, 'no': False, 'off': False, '0': False}


def progress_settings(switch, interval, stall, terminal):
    """(interval, stall) in seconds when progress is shown, else None; AnsibleActionFail on a wrong value."""
    wanted = SWITCHES.get(str(switch).strip().lower(), 'wrong') if not isinstance(switch, bool) else switch
    if wanted == 'wrong':
        raise AnsibleActionFail('pve_progress is %r: set it to auto (progress when the output is a terminal), true or false' % (switch,))
    if not (terminal if wanted is None else wanted):
        return None
    numbers = []
    for name, value in (('pve_progress_interval', interval), ('pve_progress_stall', stall)):
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = 0
        if number <= 0:
            raise AnsibleActionFail('%s is %r: set it to a number of seconds greater than 0' % (name, value))
        numbers.append(number)
    return tuple(numbers)


class ProgressAction(ActionBase):
    """As Ansible's normal action (async included), with progress when the module runs on the controller, in this
    worker process where it can (plugin_utils/_in_worker.py)."""

    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        require()
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        wrap_async = self._task.async_val and not self._connection.has_native_async
        settings = None
        if not self._task.async_val and getattr(self._connection, 'transport', None) == 'local':
            settings = shown_progress(self._templar, task_vars)
        if settings is None:
            result = merge_hash(result, execute_module(self, task_vars, wrap_async=wrap_async))
        else:
            notes_dir = tempfile.mkdtemp(prefix='puls-progress-')
            try:
                result = merge_hash(result, self._run_watched(task_vars, os.path.join(notes_dir, 'notes.jsonl'), *settings))
            finally:
                shutil.rmtree(notes_dir, ignore_errors=True)
        if not wrap_async:
            self._remove_tmp_path(self._connection._shell.tmpdir)
        return result

    def _run_watched(self, task_vars, notes, interval, stall):
        """The module's result, run in a thread while this one shows the progress it notes."""
        watch = ProgressWatch(task_vars.get('inventory_hostname', 'localhost'), interval, stall)
        result = show_while(lambda: execute_module(self, task_vars, environment={ENV: notes}), watch, notes)
        if watch.stall_warnings:
            result['warnings'] = list(result.get('warnings') or []) + watch.stall_warnings
        return result


def shown_progress(templar, task_vars):
    """(interval, stall) in seconds when the variables pve_progress* of the task ask for progress, else None."""
    return progress_settings(
        *(
            templar.template(task_vars.get(name, default))
            for name, default in (('pve_progress', 'auto'), ('pve_progress_interval', DEFAULT_INTERVAL), ('pve_progress_stall', DEFAULT_STALL))
        ),
        terminal=_terminal(),
    )


def wait_showing(templar, task_vars, what, work):
    """work()'s result; while it runs, when progress is shown, a line every interval saying what is waited for and the
    time elapsed (a wait with no PVE task: it has no percentage and never stalls)."""
    task_vars = task_vars or {}
    settings = shown_progress(templar, task_vars)
    if settings is None:
        return work()
    watch = ProgressWatch(task_vars.get('inventory_hostname', 'localhost'), *settings)
    watch.take(what, None, time.time())
    return show_while(work, watch)


def show_while(work, watch, notes=None):
    """work()'s result, run in a thread while this one shows watch's lines, fed from the notes file when one is named."""
    outcome = {}

    def execute():
        try:
            outcome['result'] = work()
        except Exception as exc:  # re-raised below, in the action's own thread
            outcome['error'] = exc

    worker = threading.Thread(target=execute, name='puls-progress-work', daemon=True)
    worker.start()
    offset = 0
    while worker.is_alive():
        worker.join(READ_EVERY)
        if notes:
            offset = _read(notes, offset, watch)
        for line in watch.lines(time.time()):
            display.display(line)
    if 'error' in outcome:
        raise outcome['error']
    return outcome['result']


def _read(path, offset, watch):
    """Feed watch what was appended to the notes file since offset; returns the new offset."""
    try:
        with open(path, 'rb') as notes:
            notes.seek(offset)
            data = notes.read()
    except FileNotFoundError:
        return offset
    watch.feed(data.decode('utf-8', 'replace'))
    return offset + len(data)


def _terminal():
    """Whether ansible-playbook's output is a terminal. A worker's own output is /dev/null (ansible-core's
    WorkerProcess._detach), so its parent's, ansible-playbook's, is looked at: through /proc, on a Linux controller;
    elsewhere progress is shown only with pve_progress: true."""
    try:
        target = os.readlink('/proc/%d/fd/1' % os.getppid())
    except OSError:
        return False
    return target.startswith(('/dev/pts/', '/dev/tty'))
