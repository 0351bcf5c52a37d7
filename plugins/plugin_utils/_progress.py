# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines on the controller from the notes a module writes while it waits (module_utils/_progress.py).

A ProgressWatch reads the notes, keeps what is being waited for, and says every ``interval`` seconds how long it has
been waited for and, where the PVE task's log reports it, the percentage done and the rate. A task of a kind that
reports progress (a download, a clone, a disk copy) whose log the module found not grown for ``stall`` seconds is
reported as stalled, with its UPID, once until it moves again.

What PVE logs:
- download-url: PVE::Tools::download_file_from_url (pve-common src/PVE/Tools.pm) runs ``wget --progress=dot:giga``,
  whose rows (GNU wget src/progress.c, dot_draw and print_row_stats) end in the percentage, the rate of that row with a
  unit K, M or G (per second) and the time left: ``  32768K ........ ........ ........ ........  3% 11.2M 4m58s``.
- A full clone or disk copy: PVE::QemuServer::QemuImage::convert (qemu-server src/PVE/QemuServer/QemuImage.pm) prints
  ``transferred 1.2 GiB of 10.0 GiB (12.01%)`` (sizes by PVE::Format::render_bytes); a drive mirror of a running VM
  prints ``drive-scsi0: transferred 1.2 GiB of 10.0 GiB (12.01%) in 5s`` (qemu-server PVE::QemuServer::BlockJob).
  Neither has a rate: it is computed from the bytes transferred between two notes.
- An upload (POST /nodes/{node}/storage/{storage}/upload) is the module's own transfer: it notes the bytes it has sent
  and the total; the line says both, the percentage and the rate computed as for a clone.
- A wait for a lease notes when the wait began (``started``): the time elapsed is counted from then, even when the run
  that holds the lease changes meanwhile.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

WGET_ROW = re.compile(r'^\s*\d+K[ .,]*?\s*(\d{1,3})%\s+(\d+(?:\.\d+)?)([KMG]?)(?=[\s=]|$)')
TRANSFERRED = re.compile(
    r'transferred (\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB|PiB) of (\d+(?:\.\d+)?) (B|KiB|MiB|GiB|TiB|PiB) '
    r'\((\d+(?:\.\d+)?)%\)'
)
UNITS = ('B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB')
# The PVE task types whose logs report progress: a task of these that logs nothing for a while has stalled.
PROGRESS_TASKS = ('download', 'qmclone', 'imgcopy', 'qmmove', 'qmcreate', 'qmrestore')
DEFAULT_INTERVAL = 5.0
DEFAULT_STALL = 120.0


def parse_progress(line):
    """(percent, rate text or None, bytes transferred or None) of a task log line, or None when it reports none."""
    match = WGET_ROW.match(line)
    if match:
        return float(match.group(1)), '%s%s/s' % (match.group(2), match.group(3) or 'B'), None
    match = TRANSFERRED.search(line)
    if match:
        done = float(match.group(1)) * 1024 ** UNITS.index(match.group(2))
        return float(match.group(5)), None, done
    return None


def human_bytes(value):
    """Bytes as PVE::Format::render_bytes writes them with one decimal: 12.0 MiB."""
    unit = 0
    while value >= 1024 and unit < len(UNITS) - 1:
        value /= 1024.0
        unit += 1
    return '%.1f %s' % (value, UNITS[unit])


def human_seconds(seconds):
    """1m10s, 2h3m, 45s: as Terraform's 'Still creating... [1m10s elapsed]'."""
    seconds = int(seconds)
    if seconds < 60:
        return '%ds' % seconds
    if seconds < 3600:
        return '%dm%ds' % divmod(seconds, 60)
    return '%dh%dm' % (seconds // 3600, seconds % 3600 // 60)


def task_type(upid):
    parts = str(upid or '').split(':')
    return parts[5] if len(parts) > 6 and parts[0] == 'UPID' else None


@dataclass
class Wait:
    """One thing a module waits for: a PVE task (upid) or a condition (a lock), as the notes tell it."""

    what: str
    upid: str | None
    started: float
    changed: float
    percent: float | None = None
    rate: str | None = None
    transferred: tuple | None = None  # (time, bytes) of the last TRANSFERRED line
    stalled_since: float | None = None
    stalls: list = field(default_factory=list)
    observed: float = 0.0  # the time of the last note: the module's last look at the task
    amount: str | None = None  # 'X of Y' of an upload, the bytes sent of the total

    def take(self, when, lines, sent=None, total=None):
        self.observed = max(self.observed, when)
        if sent is not None and total:
            self.amount = '%s of %s' % (human_bytes(sent), human_bytes(total))
            self.percent, self.rate = float(int(1000.0 * sent / total)) / 10, self._rate(when, sent)
            if sent >= total:  # all sent: PVE still takes in what its side has not read yet, then answers
                self.rate = "all sent, waiting for PVE's answer"
        if not lines:
            return
        self.changed = when
        self.stalled_since = None
        for line in lines:
            parsed = parse_progress(line)
            if parsed is None:
                continue
            percent, rate, done = parsed
            if done is not None:
                rate = self._rate(when, done)
            self.percent, self.rate = percent, rate

    def _rate(self, when, done):
        """The rate from the bytes done between the last note and this one (when, unix time); the last rate when no
        time passed between them."""
        rate = self.rate
        if self.transferred and when > self.transferred[0] and done >= self.transferred[1]:
            rate = '%s/s' % human_bytes((done - self.transferred[1]) / (when - self.transferred[0]))
        if not self.transferred or when > self.transferred[0]:
            self.transferred = (when, done)
        return rate

    @property
    def reports_progress(self):
        return self.upid is not None and (self.percent is not None or task_type(self.upid) in PROGRESS_TASKS)


class ProgressWatch:
    """Turns a module's notes into progress lines for one host; see the module docstring."""

    def __init__(self, host, interval=DEFAULT_INTERVAL, stall=DEFAULT_STALL):
        self.host = host
        self.interval = interval
        self.stall = stall
        self.waits = {}
        self.current = None
        self.shown = None
        self._partial = ''

    def feed(self, text):
        """Take the text appended to the notes file since the last call (it may end in a partial line)."""
        text = self._partial + text
        complete, _sep, self._partial = text.rpartition('\n')
        for line in complete.splitlines():
            if not line.strip():
                continue
            note = json.loads(line)
            self.take(note['what'], note.get('upid'), note['time'], note.get('lines') or (), note.get('started'), note.get('sent'), note.get('total'))

    def take(self, what, upid, when, lines=(), started=None, sent=None, total=None):
        """One look at a wait (what is waited for, its PVE task or None) at unix time when, with new task log lines;
        started is when the wait began, if before this first look; sent and total the bytes of an upload."""
        key = upid or what
        wait = self.waits.get(key)
        if wait is None:
            wait = self.waits[key] = Wait(what, upid, min(when, started or when), when)
        wait.take(when, lines, sent, total)
        if self.current is not wait:
            self.current, self.shown = wait, when

    def lines(self, now):
        """The lines to show at time now (unix time): a progress line each interval, a stall report once per stall."""
        wait, out = self.current, []
        if wait is None:
            return out
        # Stalled once the module looked and saw no new line for stall seconds (not merely between two of its looks).
        if wait.reports_progress and wait.stalled_since is None and wait.observed - wait.changed >= self.stall:
            wait.stalled_since = wait.changed
            wait.stalls.append(self.stall_report(wait, now))
            out.append(wait.stalls[-1])
        if now - self.shown >= self.interval:
            self.shown = now
            out.append(self.progress_line(wait, now))
        return out

    def progress_line(self, wait, now):
        done = [] if wait.percent is None else [wait.amount] * bool(wait.amount) + ['%g%%' % wait.percent] + ([wait.rate] if wait.rate else [])
        if wait.stalled_since is not None:
            done.append('stalled for %s' % human_seconds(now - wait.stalled_since))
        detail = ': ' + ', '.join(done) if done else ''
        return '%s: %s%s [%s elapsed]' % (self.host, wait.what, detail, human_seconds(now - wait.started))

    def stall_report(self, wait, now):
        where = ' at %g%%' % wait.percent if wait.percent is not None else ''
        return (
            '%s: %s: stalled: no progress for %s%s (%s elapsed); look at PVE task %s (its log: `pvenode task log %s`, '
            'or the node\'s Tasks in the web UI)'
            % (self.host, wait.what, human_seconds(now - wait.changed), where, human_seconds(now - wait.started), wait.upid, wait.upid)
        )

    @property
    def stall_warnings(self):
        return [report for wait in self.waits.values() for report in wait.stalls]
