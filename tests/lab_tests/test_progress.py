"""Long tasks log their progress as PVE's do, while the lab's time passes (lab/pve/progress.py): download-url as
wget --progress=dot:giga under PVE::Tools::download_file_from_url, a full clone as PVE::QemuServer::clone_disk and
QemuImage::convert, a linked clone as clone_disk without a copy."""

import re

import pytest
from lab import images
from lab.pve.progress import render_bytes, wget_rows

SEED_ISO = images.seed_files()['lab-tools.iso']
WGET_ROW = re.compile(r'^ *\d+K( \.{1,8}){0,4} *(\d{1,3})% +[\d.]+[ KMG](=\S+| \S+)$')


def test_render_bytes_and_wget_rows_follow_pve_and_wget():
    assert (render_bytes(0), render_bytes(1023), render_bytes(10 << 30), render_bytes(int(1.5 * (1 << 20)))) == ('0.0 B', '1023.0 B', '10.0 GiB', '1.5 MiB')
    rows = [text for _at, text in wget_rows((64 << 20) + (5 << 20), 10)]
    assert rows == [
        '     0K ........ ........ ........ ........ 46% 6.90M 5s',
        ' 32768K ........ ........ ........ ........ 92% 6.90M 1s',
        ' 65536K .....                              100% 6.90M=10s',
    ]


@pytest.mark.lab(time_scale=0.002)
def test_a_download_logs_wget_rows_with_percentages_and_a_hang_logs_nothing(api, lab):
    lab.pve.download_secs, lab.pve.download_bytes, lab.pve.download_hang_secs = 100, 320 << 20, 500
    url, _sums = lab.serve('tools.iso', SEED_ISO)
    status = api.download(url, 'iso', 'tools.iso')
    assert status['exitstatus'] == 'OK', status
    log = status['log']
    assert log[:3] == [
        f'downloading {url} to /var/lib/vz/template/iso/tools.iso',
        'Length: 335544320 (320.0M) [application/octet-stream]',
        "Saving to: '/var/lib/vz/template/iso/tools.iso.tmp_dwnl.4242'",
    ]
    rows = [line for line in log if WGET_ROW.match(line)]
    # Ten full rows of 32 MiB, then the empty last row wget's dot_finish writes for a file that ends on a row's end.
    assert [int(WGET_ROW.match(row).group(2)) for row in rows] == list(range(10, 101, 10)) + [100]
    assert rows[-2].endswith('100% 3.20M 0s') and rows[-1] == '327680K' + ' ' * 36 + '100% 0.00 =1m40s'
    assert log[3:] == rows + [f"download of '{url}' to '/var/lib/vz/template/iso/tools.iso' finished", 'TASK OK']


@pytest.mark.lab(time_scale=0.002, clone_secs=100)
def test_a_full_clone_logs_each_percent_of_the_copy_and_a_linked_clone_none(api):
    full = api.clone(121, full=1)['log']
    assert full[0] == 'creating a clone of VM 9017 with ID 121'
    assert re.fullmatch(r'create full clone of drive scsi0 \(local-lvm:base-9017-disk-0\)', full[1]), full[1]
    copies = [line for line in full if line.startswith('transferred ')]
    assert len(copies) == 100 and full[2:102] == copies
    assert copies[0].endswith('(1.00%)') and copies[-1].endswith('(100.00%)')
    size = re.match(r'transferred (\S+ \S+) of (\S+ \S+) ', copies[-1])
    assert size.group(1) == size.group(2)
    linked = api.clone(122)['log']
    assert [line for line in linked if 'clone of drive' in line] == [full[1].replace('full', 'linked')]
    assert not [line for line in linked if line.startswith('transferred ')]


@pytest.mark.lab(time_scale=0.002)
def test_a_disk_import_logs_clone_disks_header_and_the_copys_progress_before_the_vm_is_made(api, lab):
    url = lab.served.url('debian-12-genericcloud-amd64.qcow2')
    assert api.download(url, 'import', 'debian-12.qcow2')['exitstatus'] == 'OK'
    status = api.run('POST', '/nodes/pve1/qemu', vmid=130, scsi0='local-lvm:0,import-from=local:import/debian-12.qcow2', scsi1='local-lvm:1')
    assert status['exitstatus'] == 'OK', status
    # Qemu.pm create_disks -> $import_from_volid -> clone_disk (no drive name: no VM holds the volume) -> QemuImage::convert.
    start = status['log'].index('create full clone of drive (local:import/debian-12.qcow2)')
    transferred = status['log'][start + 1 : start + 101]
    assert transferred[0] == 'transferred 30.7 MiB of 3.0 GiB (1.00%)' and transferred[-1] == 'transferred 3.0 GiB of 3.0 GiB (100.00%)'
    assert len([line for line in status['log'] if line.startswith('transferred ')]) == 100
    assert api.config(130)['scsi0'] == 'local-lvm:vm-130-disk-0,size=3G'
