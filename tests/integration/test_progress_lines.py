# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress of long waits (plugin_utils/_progress_action.py) in real ansible-playbook runs against the lab, whose tasks
log their progress as PVE's do (tests/lab/pve/progress.py): lines with percentages while a download and a clone run,
a stalled download reported with its UPID and counted as a warning, progress by default only when the output is a
terminal, and the time elapsed while the role waits for a slow machine's SSH port and cloud-init."""

from __future__ import annotations

import re
import sys
import time

import lab_vms
import pytest
from integration.playbooks import run_playbook
from lab import images
from lab.images import qcow2

TOOLS_ISO = images.seed_files()['lab-tools.iso']
DOWNLOAD_LINE = re.compile(
    r'^localhost: downloading (\S+) to storage local of node pve1 as (\S+): (\d+)%, ([\d.]+[KMG]?B?/s) '
    r'\[(\d+)s elapsed\]$',
    re.MULTILINE,
)
UPLOAD_LINE = re.compile(
    r'^localhost: uploading big\.iso \(33554432 bytes\) to storage local of node pve1: ([\d.]+) MiB of 32\.0 MiB, ([\d.]+)%, '
    r'([\d.]+ [KMG]iB/s) \[(\d+)s elapsed\]$',
    re.MULTILINE,
)
CLONE_LINE = re.compile(r'^localhost: cloning VM 9017 on pve1 as slow1: ([\d.]+)%, ([\d.]+ [KMG]iB/s) \[(\d+)s elapsed\]$', re.MULTILINE)
IMPORT_LINE = re.compile(r'^localhost: creating VM imp1 on pve1: ([\d.]+)%, ([\d.]+ [KMG]iB/s) \[(\d+)s elapsed\]$', re.MULTILINE)
STALL = re.compile(
    r'^localhost: downloading \S+ to storage local of node pve1 as hung\.iso: stalled: no progress for (\d+)s at '
    r'(\d+)% \(\d+s elapsed\); look at PVE task (UPID:pve1:[0-9A-F:]+:download:hung\.iso:[^ ]+:) \(its log: '
    r'`pvenode task log \3`, or the node\'s Tasks in the web UI\)$',
    re.MULTILINE,
)


def play(*tasks, **variables):
    return [{'name': 'Long waits', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'vars': variables, 'tasks': list(tasks)}]


@pytest.mark.slow(minutes=2)
@pytest.mark.lab(time_scale=1, clone_secs=30)
def test_a_60_s_download_a_30_s_clone_and_a_12_s_disk_import_show_progress_lines_with_percentages(lab, tmp_path):
    lab.pve.download_secs, lab.pve.import_secs = 60, 12

    def cloud_image():
        lab.pve.store_file('local', 'noble.qcow2', 4 << 20, content='import')
        lab.pve.volume_data['local:import/noble.qcow2'] = qcow2(3584 << 20)

    lab.call(cloud_image)
    url, _sums = lab.serve('tools.iso', TOOLS_ISO)
    imported = {'name': 'imp1', 'vmid': 131, 'image': 'local:import/noble.qcow2', 'storage': 'local-lvm', 'node': 'pve1'}
    run = run_playbook(
        tmp_path,
        play(
            {'name': 'Download', 'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': 'tools.iso', 'url': url}},
            {'name': 'Clone', 'puls.proxmox.pve_vm': {'name': 'slow1', 'vmid': 130, 'image': 9017, 'node': 'pve1'}},
            {'name': 'Import', 'puls.proxmox.pve_vm': imported},
            pve_progress=True,
        ),
        lab.env,
        diff=False,
    )
    assert run.rc == 0, run.stdout + run.stderr

    downloads = DOWNLOAD_LINE.findall(run.stdout)
    assert len(downloads) >= 3, run.stdout
    assert {(found[0], found[1]) for found in downloads} == {(url, 'tools.iso')}
    percents = [int(found[2]) for found in downloads]
    assert percents == sorted(percents) and percents[0] < percents[-1] < 100
    assert all(rate.endswith('M/s') for *_rest, rate, _elapsed in downloads)

    clones = CLONE_LINE.findall(run.stdout)
    assert len(clones) >= 3, run.stdout
    percents = [float(found[0]) for found in clones]
    assert percents == sorted(percents) and percents[0] < percents[-1] < 100

    # The disk copy of import-from is logged as a full clone's (qemu-server Qemu.pm create_disks -> clone_disk).
    imports = IMPORT_LINE.findall(run.stdout)
    assert len(imports) >= 2, run.stdout
    percents = [float(found[0]) for found in imports]
    assert percents == sorted(percents) and percents[0] < percents[-1] < 100
    assert 'stalled' not in run.stdout and not [r for r in run.results if r['result'].get('warnings')]


@pytest.mark.lab(time_scale=0.05)
def test_a_stalled_download_is_reported_with_its_upid_as_a_warning_and_progress_shows_on_a_terminal_only(lab, tmp_path):
    # 32 MiB (3%) in 0.05 s, then no line for 2 s (quiet) or 4 s (stalled), then the rest in 0.45 s.
    lab.pve.download_secs, lab.pve.download_hang_secs = 10, 40
    url, _sums = lab.serve('hung.iso', TOOLS_ISO)

    def download(filename):
        return {'name': 'Download', 'puls.proxmox.pve_iso': {'node': 'pve1', 'filename': filename, 'url': url}}

    # pve_progress is auto: the output of a test's ansible-playbook is not a terminal, so no progress is shown.
    quiet = run_playbook(tmp_path, play(download('quiet.iso'), pve_progress_interval=1, pve_progress_stall=1), lab.env, name='quiet')
    assert quiet.rc == 0, quiet.stdout + quiet.stderr
    assert quiet.one('Download')['changed'] and 'elapsed' not in quiet.stdout and not quiet.one('Download').get('warnings')

    lab.pve.download_hang_secs = 80
    # pve_progress is still auto, and this run's output is a terminal: progress is shown.
    run = run_playbook(tmp_path, play(download('hung.iso'), pve_progress_interval=1, pve_progress_stall=2), lab.env, name='stalled', terminal=True)
    assert run.rc == 0, run.stdout + run.stderr
    stalls = STALL.findall(run.stdout)
    assert len(stalls) == 1, run.stdout
    seconds, percent, upid = stalls[0]
    assert int(seconds) >= 2 and percent == '3'
    assert lab.call(lambda: lab.pve.tasks[upid]['status']) == 'stopped'
    assert re.search(
        r'^localhost: downloading \S+ to storage local of node pve1 as hung\.iso: 3%, [\d.]+M/s, stalled for \d+s '
        r'\[\d+s elapsed\]$',
        run.stdout,
        re.MULTILINE,
    ), run.stdout
    # A warning of the task's result, which callbacks count (the test's record_results callback recorded it).
    warnings = run.one('Download')['warnings']
    assert len(warnings) == 1 and STALL.match(warnings[0])
    assert '[WARNING]: localhost: downloading ' + url in run.stdout


def test_the_waits_for_a_slow_machines_ssh_port_and_cloud_init_show_the_time_elapsed(lab, tmp_path):
    api = lab_vms.client(lab)
    key, public = lab_vms.ssh_key(tmp_path)
    (tmp_path / 'mark.sh').write_text('echo marked >> "$HOME/marks"\n')
    guest = lab_vms.boot(lab, api, 140, 'slow1', lab.address(3), public, start=False)
    # A slow first boot, in real seconds after the start: SSH listens after 15 s, cloud-init is done after 25 s.
    guest.ssh_listen_delay, guest.cloud_init_delay = 15.0, 25.0
    api.run_task('POST', '/nodes/%s/qemu/140/status/start' % lab_vms.NODE)
    machine = {
        'pve_vmid': 140,
        'pve_address': lab.address(3),
        'pve_provision': ['mark.sh'],
        'pve_ssh_user': 'alice',
        'pve_ssh_private_key_file': str(key),
        'pve_guest_python': sys.executable,
        'pve_progress_interval': 1,
    }
    chain = [
        {
            'name': 'Provision',
            'hosts': 'slow1',
            'gather_facts': False,
            'tasks': [{'name': 'Run the chain', 'ansible.builtin.include_role': {'name': 'puls.proxmox.reconcile', 'tasks_from': 'provision'}}],
        }
    ]

    # pve_progress is auto, and the output is a terminal: progress is shown.
    run = run_playbook(tmp_path, chain, lab.env, inventory={'all': {'hosts': {'slow1': machine}}}, name='slow-boot', terminal=True)
    assert run.rc == 0, run.stdout

    ssh = [int(s) for s in re.findall(r'^slow1: waiting for SSH port 22 of %s \[(\d+)s elapsed\]$' % re.escape(lab.address(3)), run.stdout, re.M)]
    cloud_init = [int(s) for s in re.findall(r'^slow1: waiting for cloud-init to finish \[(\d+)s elapsed\]$', run.stdout, re.M)]
    assert len(ssh) >= 3 and ssh == sorted(ssh), run.stdout
    assert len(cloud_init) >= 3 and cloud_init == sorted(cloud_init), run.stdout
    assert run.stdout.rindex('waiting for SSH port') < run.stdout.index('waiting for cloud-init')
    assert (guest.home / 'marks').read_text() == 'marked\n'
    waited = [r['result'] for r in run.results if r['task'].endswith(' : Wait for cloud-init to finish')]
    assert [(r['rc'], r['changed']) for r in waited] == [(0, False)] and 'status: done' in waited[0]['stdout']
    assert not [r for r in run.results if r['result'].get('warnings')]


def test_the_waits_for_another_runs_lease_and_its_build_show_what_is_waited_for_and_the_time_elapsed(lab, tmp_path):
    # Another run holds the lease on golden's build for the next 15 minutes, and its build VM golden-build exists.
    expires = int(time.time()) + 900
    lab.call(lambda: lab.pve.node_configs.setdefault('pve1', {}).update(description=['[puls-leases: template/golden=other-run@elsewhere:%d]' % expires]))
    api = lab_vms.client(lab)
    api.run_task('POST', '/nodes/pve1/qemu/9017/clone', newid=150, name='golden-build')
    api.put('/nodes/pve1/qemu/150/config', tags='puls-building;puls-managed')
    # This run waits 5 s for each, then gives up.
    lease = {'key': 'template/golden', 'run_id': 'this-run', 'wait': 5, 'wait_delay': 1}
    query = {'name': 'golden', 'wait': 5, 'wait_delay': 1}
    tasks = {'name': 'Lease', 'puls.proxmox.pve_lease': lease}, {'name': 'Template', 'puls.proxmox.pve_template': query}
    run = run_playbook(tmp_path, play(*tasks, pve_progress=True, pve_progress_interval=1), lab.env)
    assert run.rc == 0, run.stdout + run.stderr

    for line in (
        r'waiting for the lease template/golden, held by run other-run on controller elsewhere',
        r'waiting for another build of template golden to end: build VM golden-build \(150 on pve1\)',
    ):
        elapsed = [int(s) for s in re.findall(r'^localhost: %s \[(\d+)s elapsed\]$' % line, run.stdout, re.M)]
        assert len(elapsed) >= 3 and elapsed == sorted(elapsed), run.stdout
    refused = run.one('Lease')
    assert not refused['acquired'] and not refused['changed'] and refused['held_by']['run_id'] == 'other-run' and refused['waited'] >= 5
    building = run.one('Template')
    assert building['building'] == {'vmid': 150, 'node': 'pve1', 'name': 'golden-build'} and building['waited'] >= 5


@pytest.mark.lab(time_scale=1)
def test_an_upload_shows_the_bytes_sent_of_the_total_the_percentage_and_the_rate(lab, tmp_path):
    # The lab reads the upload's body at 6 MiB per second (a lab knob, tests/lab/pve/transfer.py): 32 MiB take over 5 s.
    lab.pve.upload_rate = 6 << 20
    (tmp_path / 'big.iso').write_bytes(bytes(range(256)) * (128 << 10))
    upload = {'node': 'pve1', 'filename': 'big.iso', 'src': str(tmp_path / 'big.iso')}
    run = run_playbook(tmp_path, play({'name': 'Upload', 'puls.proxmox.pve_iso': upload}, pve_progress=True, pve_progress_interval=1), lab.env)
    assert run.rc == 0, run.stdout + run.stderr

    uploads = UPLOAD_LINE.findall(run.stdout)
    assert len(uploads) >= 3, run.stdout
    sent = [float(found[0]) for found in uploads]
    percents = [float(found[1]) for found in uploads]
    assert sent == sorted(sent) and percents == sorted(percents) and percents[0] < percents[-1] <= 100
    assert all(abs(mib / 32 * 100 - percent) < 0.5 for mib, percent in zip(sent, percents))
    assert lab.volume_bytes('local:iso/big.iso') == (tmp_path / 'big.iso').read_bytes()
