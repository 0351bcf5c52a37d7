# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""What a module is waiting for, noted for its action plugin on the controller, which shows it (the module prints nothing).

The action plugin names a file in the environment variable PULS_PROGRESS_FILE; each note is one JSON line:
``{"time": unix time, "what": what is waited for, "upid": the PVE task or null, "lines": new lines of the task's log}``,
with ``"started"`` (unix time the wait began, when the module knows it better than its first note does) and
``"sent"``, ``"total"`` (bytes of a transfer the module does itself, an upload) where they apply.
Without the variable (progress is off, or the module runs without the action plugin) nothing is noted or fetched.
"""

from __future__ import annotations

import json
import os
import time

ENV = 'PULS_PROGRESS_FILE'


class ProgressNotes:
    """Appends notes to the file the action plugin reads while the module runs."""

    def __init__(self, path):
        self.path = path

    def note(self, what, upid=None, lines=(), started=None, sent=None, total=None):
        """Note one look at a wait; progress never fails the module, so a file that cannot be written is let be."""
        record = {'time': time.time(), 'what': what, 'upid': upid, 'lines': list(lines)}
        for name, value in (('started', started), ('sent', sent), ('total', total)):
            if value is not None:
                record[name] = value
        try:
            with open(self.path, 'a', encoding='utf-8') as out:
                out.write(json.dumps(record) + '\n')
        except OSError:
            pass


def from_environment():
    """The ProgressNotes the action plugin asked for, or None."""
    path = os.environ.get(ENV)
    return ProgressNotes(path) if path else None
