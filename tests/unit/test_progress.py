# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines from a module's notes (plugin_utils/_progress.py), when they are shown, and how a wait is shown while
it runs (_progress_action.py)."""

from __future__ import annotations

import json
import threading

import pytest
from ansible.errors import AnsibleActionFail

from ansible_collections.puls.proxmox.plugins.plugin_utils import _progress_action
from ansible_collections.puls.proxmox.plugins.plugin_utils._progress import ProgressWatch, human_seconds, parse_progress
from ansible_collections.puls.proxmox.plugins.plugin_utils._progress_action import progress_settings, show_while, wait_showing

UPID = 'UPID:pve1:000003E8:00001B58:6B0CCF68:download:tools.iso:root@pam!puls:'
WHAT = 'downloading http://mirror/tools.iso to storage local of node pve1 as tools.iso'


def note(when, lines=(), what=WHAT, upid=UPID):
    return json.dumps({'time': when, 'what': what, 'upid': upid, 'lines': list(lines)}) + '\n'


@pytest.mark.parametrize(
    'line, parsed',
    [
        # wget --progress=dot:giga rows (GNU wget src/progress.c print_row_stats), as PVE's download-url logs them.
        ('     0K ........ ........ ........ ........  3% 11.2M 4m58s', (3.0, '11.2M/s', None)),
        (' 65536K .....                              100%  105M=9.5s', (100.0, '105M/s', None)),
        ('327680K                                    100% 0.00 =1m40s', (100.0, '0.00B/s', None)),
        # PVE::QemuServer::QemuImage::convert and a drive mirror.
        ('transferred 1.0 GiB of 10.0 GiB (10.00%)', (10.0, None, float(1 << 30))),
        ('drive-scsi0: transferred 512.0 MiB of 10.0 GiB (5.00%) in 5s', (5.0, None, float(512 << 20))),
        ('Length: 1073741824 (1.0G) [application/octet-stream]', None),
        ('TASK OK', None),
    ],
)
def test_progress_is_read_from_the_lines_pve_logs(line, parsed):
    assert parse_progress(line) == parsed


def test_human_seconds():
    assert [human_seconds(s) for s in (0, 59.9, 70, 3599, 7380)] == ['0s', '59s', '1m10s', '59m59s', '2h3m']


def test_a_line_each_interval_with_the_latest_percentage_and_rate():
    watch = ProgressWatch('web1', interval=5, stall=60)
    watch.feed(note(100.0, ['downloading http://mirror/tools.iso to /var/lib/vz/template/iso/tools.iso']))
    assert watch.lines(104.0) == []
    watch.feed(note(104.5, ['     0K ........ ........ ........ ........  3% 11.2M 4m58s']))
    assert watch.lines(105.0) == [f'web1: {WHAT}: 3%, 11.2M/s [5s elapsed]']
    watch.feed(note(107.0, [' 32768K ........ ........ ........ ........  6% 12.0M 4m40s']))
    assert watch.lines(109.0) == []
    assert watch.lines(110.0) == [f'web1: {WHAT}: 6%, 12.0M/s [10s elapsed]']


def test_a_clone_rate_comes_from_the_bytes_between_two_notes_and_a_partial_note_waits_for_its_end():
    watch = ProgressWatch('web1', interval=1, stall=60)
    clone = 'UPID:pve1:000003E9:00001B58:6B0CCF68:qmclone:9000:root@pam!puls:'
    text = note(10.0, ['transferred 1.0 GiB of 10.0 GiB (10.00%)'], 'cloning VM 9000 on pve1 as web1', clone)
    text += note(12.0, ['transferred 1.2 GiB of 10.0 GiB (12.00%)'], 'cloning VM 9000 on pve1 as web1', clone)
    watch.feed(text[:-20])
    watch.feed(text[-20:])
    assert watch.lines(12.0) == ['web1: cloning VM 9000 on pve1 as web1: 12%, 102.4 MiB/s [2s elapsed]']


def test_a_download_whose_log_the_module_found_unchanged_for_stall_seconds_is_reported_once_with_its_upid():
    watch = ProgressWatch('web1', interval=100, stall=30)
    watch.feed(note(0.0, ['     0K ........ ........ ........ ........  3% 11.2M 4m58s']))
    watch.feed(note(20.0))
    # Between two looks of the module nothing is known: no report yet, however late.
    assert watch.lines(45.0) == []
    watch.feed(note(31.0))
    report = (
        f'web1: {WHAT}: stalled: no progress for 31s at 3% (31s elapsed); look at PVE task {UPID} '
        f"(its log: `pvenode task log {UPID}`, or the node's Tasks in the web UI)"
    )
    assert watch.lines(31.0) == [report]
    watch.feed(note(40.0))
    assert watch.lines(40.0) == []
    assert watch.lines(100.0) == [f'web1: {WHAT}: 3%, 11.2M/s, stalled for 1m40s [1m40s elapsed]']
    watch.feed(note(101.0, [' 32768K ........ ........ ........ ........  6% 12.0M 4m40s']))
    watch.feed(note(140.0))
    assert watch.lines(140.0) == [report.replace('31s at 3% (31s', '39s at 6% (2m20s')]
    assert watch.stall_warnings == [report, report.replace('31s at 3% (31s', '39s at 6% (2m20s')]


def test_a_lock_wait_has_elapsed_time_and_never_stalls():
    watch = ProgressWatch('web1', interval=10, stall=5)
    watch.feed(note(0.0, what='waiting for VM 104 on pve1 to be unlocked (lock: clone)', upid=None))
    watch.feed(note(30.0, what='waiting for VM 104 on pve1 to be unlocked (lock: clone)', upid=None))
    assert watch.lines(30.0) == ['web1: waiting for VM 104 on pve1 to be unlocked (lock: clone) [30s elapsed]']
    assert watch.stall_warnings == []


@pytest.mark.parametrize(
    'switch, terminal, shown',
    [
        ('auto', True, (5.0, 120.0)),
        ('auto', False, None),
        (True, False, (5.0, 120.0)),
        ('true', False, (5.0, 120.0)),
        (False, True, None),
        ('no', True, None),
    ],
)
def test_progress_is_shown_on_a_terminal_unless_asked_otherwise(switch, terminal, shown):
    assert progress_settings(switch, 5, 120, terminal=terminal) == shown


@pytest.mark.parametrize(
    'switch, interval, stall, message',
    [
        ('sometimes', 5, 120, "pve_progress is 'sometimes': set it to auto"),
        (True, 0, 120, 'pve_progress_interval is 0: set it to a number of seconds greater than 0'),
        (True, 5, 'x', "pve_progress_stall is 'x': set it to a number of seconds greater than 0"),
    ],
)
def test_wrong_progress_settings_say_what_to_set(switch, interval, stall, message):
    with pytest.raises(AnsibleActionFail, match=message):
        progress_settings(switch, interval, stall, terminal=True)


def test_a_wait_without_a_pve_task_says_what_is_waited_for_and_the_time_elapsed():
    watch = ProgressWatch('web1', interval=5, stall=1)
    watch.take('waiting for SSH port 22 of 127.0.0.5', None, 100.0)
    assert watch.lines(103.0) == []
    assert watch.lines(105.0) == ['web1: waiting for SSH port 22 of 127.0.0.5 [5s elapsed]']
    assert watch.lines(130.0) == ['web1: waiting for SSH port 22 of 127.0.0.5 [30s elapsed]']
    assert watch.stall_warnings == []


class OneLine:
    """A watch with one line to show at every look."""

    def lines(self, now):
        return ['web1: waiting for cloud-init to finish [1s elapsed]']


def test_the_lines_are_shown_while_the_work_runs_and_its_result_or_error_comes_back(monkeypatch):
    shown = []
    first_line = threading.Event()

    def display(line):
        shown.append(line)
        first_line.set()

    monkeypatch.setattr(_progress_action.display, 'display', display)
    # The work ends only once a line was shown, so a line shown after it ended cannot pass this test.
    assert show_while(lambda: {'rc': 0, 'shown_meanwhile': first_line.wait(30)}, OneLine()) == {'rc': 0, 'shown_meanwhile': True}
    assert shown[0] == 'web1: waiting for cloud-init to finish [1s elapsed]'

    def broken():
        raise ConnectionError('SSH refused')

    with pytest.raises(ConnectionError, match='SSH refused'):
        show_while(broken, OneLine())


class Templar:
    def template(self, value):
        return value


def test_a_wait_with_progress_off_runs_the_work_alone(monkeypatch):
    monkeypatch.setattr(_progress_action, 'show_while', lambda *args: pytest.fail('progress is off, nothing is shown'))
    assert wait_showing(Templar(), {'pve_progress': False}, 'waiting for cloud-init to finish', lambda: {'rc': 0}) == {'rc': 0}
    with pytest.raises(AnsibleActionFail, match="pve_progress is 'often'"):
        wait_showing(Templar(), {'pve_progress': 'often'}, 'waiting for cloud-init to finish', lambda: {'rc': 0})


def test_an_upload_says_the_bytes_sent_of_the_total_and_a_lease_wait_counts_from_its_start():
    watch = ProgressWatch('web1', interval=1, stall=60)
    what = 'uploading big.iso (33554432 bytes) to storage local of node pve1'
    watch.feed(json.dumps({'time': 10.0, 'what': what, 'upid': None, 'lines': [], 'sent': 4 << 20, 'total': 32 << 20}) + '\n')
    watch.feed(json.dumps({'time': 12.0, 'what': what, 'upid': None, 'lines': [], 'sent': 12 << 20, 'total': 32 << 20}) + '\n')
    assert watch.lines(12.0) == ['web1: %s: 12.0 MiB of 32.0 MiB, 37.5%%, 4.0 MiB/s [2s elapsed]' % what]
    watch.feed(json.dumps({'time': 13.0, 'what': what, 'upid': None, 'lines': [], 'sent': 32 << 20, 'total': 32 << 20}) + '\n')
    assert watch.lines(13.0) == ["web1: %s: 32.0 MiB of 32.0 MiB, 100%%, all sent, waiting for PVE's answer [3s elapsed]" % what]

    lease = 'waiting for the lease template/golden, held by run other-run on controller laptop'
    watch.feed(json.dumps({'time': 30.0, 'what': lease, 'upid': None, 'lines': [], 'started': 20.0}) + '\n')
    assert watch.lines(31.0) == ['web1: %s [11s elapsed]' % lease]
    assert not watch.stall_warnings
