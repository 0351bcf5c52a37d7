# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_iso through real ansible-playbook runs against the lab: downloads, uploads and seed ISOs on one node and on
two, replacement when the declared source changes, deletion, and bad input refused before any write.

Run inside a network namespace: hacking/netns-run .venv/bin/pytest tests/integration/test_pve_iso.py -n 2
"""

from __future__ import annotations

import collections
import re
import subprocess
import threading

import pytest
import yaml
from integration.playbooks import four_runs, run_playbook
from integration.polling import wait_until
from integration.uploads import assert_pve_ordered_upload
from lab import images

from ansible_collections.puls.proxmox.plugins.modules import pve_iso

TOOLS_ISO = images.seed_files()['lab-tools.iso']
TOOLS_ISO_GZ = images.seed_files()['lab-tools.iso.gz']
NOBLE_IMG = images.seed_files()['noble-server-cloudimg-amd64.img']
USER_DATA = '#cloud-config\npackage_update: true\npackages: [nginx]\n'
NETWORK_CONFIG = 'version: 2\nethernets:\n  eth0:\n    dhcp4: true\n'
RECORD_LINE = re.compile(r'^\[puls-files: (.*)\]$', re.MULTILINE)


def play(*tasks):
    return [{'name': 'Files on Proxmox VE storage', 'hosts': 'localhost', 'connection': 'local', 'gather_facts': False, 'tasks': list(tasks)}]


def iso_task(name, **options):
    return {'name': name, 'puls.proxmox.pve_iso': options}


def recorded(lab, node):
    """The node's [puls-files: ...] entries, read from its notes through the lab (not through the module's code)."""
    notes = lab.call(lambda: ''.join(line + '\n' for line in lab.pve.node_configs.get(node, {}).get('description', ())))
    found = RECORD_LINE.findall(notes)
    return dict(entry.split('=') for entry in found[-1].split(',')) if found else {}


def node_notes(lab, node):
    return lab.call(lambda: '\n'.join(lab.pve.node_configs.get(node, {}).get('description', ())))


def add_shared_storage(lab, name='shared-iso'):
    def add():
        lab.pve.storages[name] = {
            'type': 'nfs',
            'active': 1,
            'shared': 1,
            'content': 'iso',
            'files': set(),
            'server': '127.0.0.1',
            'export': '/export/iso',
            'path': '/mnt/pve/' + name,
        }

    lab.call(add)


def iso_files(data, tmp_path, name):
    """The volume id and files of an ISO image as isoinfo and xorriso (Debian's, not the project's code) read them."""
    image = tmp_path / name
    image.write_bytes(data)
    info = subprocess.run(['isoinfo', '-d', '-i', str(image)], capture_output=True, text=True, check=True).stdout
    volume_id = re.search(r'^Volume id: (.*)$', info, re.MULTILINE).group(1).strip()
    out = tmp_path / (name + '.d')
    subprocess.run(['xorriso', '-osirrox', 'on', '-indev', str(image), '-extract', '/', str(out)], capture_output=True, text=True, check=True)
    return volume_id, {path.name: path.read_bytes() for path in out.iterdir()}


def test_downloads_uploads_and_seeds_on_one_node_and_on_two_converge_in_four_runs(lab, tmp_path):
    add_shared_storage(lab)
    upload_one, upload_two = tmp_path / 'one.iso', tmp_path / 'two.iso'
    upload_one.write_bytes(images.iso('ONE', {'one.txt': b'one\n'}))
    upload_two.write_bytes(images.iso('TWO', {'two.txt': b'two\n'}))
    tools_url, tools_sums = lab.serve('tools.iso', TOOLS_ISO)
    noble_url, noble_sums = lab.serve('noble-server-cloudimg-amd64.img', NOBLE_IMG)
    gz_url, gz_sums = lab.serve('tools.iso.gz', TOOLS_ISO_GZ)
    seed = {'hostname': 'web1', 'user_data': USER_DATA, 'network_config': NETWORK_CONFIG}
    plays = play(
        iso_task('url on one node', node='pve1', filename='tools.iso', url=tools_url, checksum='sha256:' + tools_sums['sha256']),
        iso_task('url on two nodes', nodes=['pve1', 'pve2'], content='import', filename='noble.img', url=noble_url, checksum='sha512:' + noble_sums['sha512']),
        iso_task('compressed url', node='pve1', filename='gz-tools.iso', url=gz_url, compression='gz', checksum='md5:' + gz_sums['md5']),
        iso_task('src on one node', node='pve1', filename='one.iso', src=str(upload_one)),
        iso_task('src on two nodes', nodes=['pve1', 'pve2'], filename='two.iso', src=str(upload_two)),
        iso_task('seed on one node', node='pve1', filename='web1-seed.iso', seed=seed),
        iso_task('seed on two nodes', nodes=['pve1', 'pve2'], filename='web1-copy.iso', seed=seed),
        iso_task('url on a shared storage', nodes=['pve1', 'pve2'], storage='shared-iso', filename='shared.iso', url=tools_url),
    )
    runs = four_runs(tmp_path, plays, lab.env)

    real = runs.real
    expected = {
        'url on one node': ('local:iso/tools.iso', {'pve1': 'download'}, TOOLS_ISO),
        'url on two nodes': ('local:import/noble.qcow2', {'pve1': 'download', 'pve2': 'download'}, NOBLE_IMG),
        'compressed url': ('local:iso/gz-tools.iso', {'pve1': 'download'}, TOOLS_ISO),
        'src on one node': ('local:iso/one.iso', {'pve1': 'upload'}, upload_one.read_bytes()),
        'src on two nodes': ('local:iso/two.iso', {'pve1': 'upload', 'pve2': 'upload'}, upload_two.read_bytes()),
        'seed on one node': ('local:iso/web1-seed.iso', {'pve1': 'upload'}, None),
        'seed on two nodes': ('local:iso/web1-copy.iso', {'pve1': 'upload', 'pve2': 'upload'}, None),
        'url on a shared storage': ('shared-iso:iso/shared.iso', {'pve1': 'download'}, TOOLS_ISO),
    }
    for name, (volid, actions, data) in expected.items():
        result = real.one(name)
        assert (result['volid'], result['action']) == (volid, actions), name
        assert result['diff']['after'] == {node: {volid: result['record']} for node in actions}, name
        if data is not None:
            assert lab.volume_bytes(volid) == data, name
        for node in actions:
            assert recorded(lab, node)[volid] == result['record'], (name, node)
    # Only the real run wrote: one transfer per copy, one record per node and file, and on each of the two nodes, whose
    # config starts empty (no digest), the one write that gives it a digest before the first record; nothing else,
    # nothing twice.
    writes = collections.Counter((request.method, request.path.rsplit('/', 1)[1]) for request in lab.writes())
    assert writes == {('POST', 'download-url'): 5, ('POST', 'upload'): 6, ('PUT', 'config'): 11 + 2}
    anchors = [request.path for request in lab.writes() if request.path.endswith('/config') and 'startall-onboot-delay' in request.body]
    assert sorted(path.rsplit('/', 2)[-2] for path in anchors) == ['pve1', 'pve2']
    assert 'shared-iso:iso/shared.iso' not in recorded(lab, 'pve2')
    assert 'local:iso/one.iso' not in recorded(lab, 'pve2')
    assert runs.real_again.one('seed on one node')['reason'] == {'pve1': 'on the storage from the declared source'}

    seed_iso = lab.volume_bytes('local:iso/web1-seed.iso')
    assert lab.volume_bytes('local:iso/web1-copy.iso') == seed_iso  # the same input gives the same bytes
    volume_id, files = iso_files(seed_iso, tmp_path, 'seed.iso')
    meta = yaml.safe_load(files['meta-data'])
    assert volume_id == 'cidata'
    assert set(files) == {'user-data', 'meta-data', 'network-config'}
    assert (files['user-data'].decode(), files['network-config'].decode()) == (USER_DATA, NETWORK_CONFIG)
    assert meta['local-hostname'] == 'web1' and meta['instance-id'] == real.one('seed on one node')['instance_id']


def test_a_changed_source_replaces_the_file_and_check_mode_only_reports_it(lab, tmp_path):
    url, sums = lab.serve('tools.iso', TOOLS_ISO)
    src = tmp_path / 'upload.iso'
    src.write_bytes(images.iso('OLD', {'old.txt': b'old\n'}))
    lab.call(lambda: lab.pve.store_file('local', 'manual.iso', 4, 'iso'))  # put there by hand: no record

    def declared(checksum, user_data):
        return play(
            iso_task('url', node='pve1', filename='tools.iso', url=url, checksum=checksum),
            iso_task('src', node='pve1', filename='upload.iso', src=str(src)),
            iso_task('seed', node='pve1', filename='seed.iso', seed={'user_data': user_data}),
            iso_task('hand-placed', node='pve1', filename='manual.iso', url=url),
        )

    first = run_playbook(tmp_path, declared('sha256:' + sums['sha256'], USER_DATA), lab.env, name='first')
    assert first.rc == 0, first.stdout
    assert first.one('hand-placed')['action'] == {'pve1': 'replace'}
    assert 'unknown origin' in first.one('hand-placed')['reason']['pve1']

    new_iso = images.iso('NEWER', {'newer.txt': b'newer\n'})
    url, sums = lab.serve('tools.iso', new_iso)
    src.write_bytes(images.iso('NEW', {'new.txt': b'new\n'}))
    changed = declared('sha1:' + sums['sha1'], USER_DATA + 'packages: [htop]\n')
    writes = len(lab.writes())
    check = run_playbook(tmp_path, changed, lab.env, check=True, name='check')
    assert check.rc == 0, check.stdout
    assert len(lab.writes()) == writes, 'check mode wrote something'
    real = run_playbook(tmp_path, changed, lab.env, name='real')
    assert real.rc == 0, real.stdout
    for name in ('url', 'src', 'seed'):
        predicted, done = check.one(name), real.one(name)
        assert predicted['action'] == done['action'] == {'pve1': 'replace'}, name
        assert predicted['diff'] == done['diff'] and predicted['changed'] and done['changed'], name
        assert done['diff']['before'] == {'pve1': {done['volid']: first.one(name)['record']}}, name
        assert done['reason']['pve1'].startswith('the declared source changed'), name
        assert recorded(lab, 'pve1')[done['volid']] == done['record'] != first.one(name)['record'], name
    assert check.one('hand-placed')['changed'] is False
    assert lab.volume_bytes('local:iso/tools.iso') == new_iso
    assert lab.volume_bytes('local:iso/upload.iso') == src.read_bytes()
    assert real.one('seed')['instance_id'] != first.one('seed')['instance_id']
    meta = yaml.safe_load(iso_files(lab.volume_bytes('local:iso/seed.iso'), tmp_path, 'seed.iso')[1]['meta-data'])
    assert meta['instance-id'] == real.one('seed')['instance_id']
    assert meta['local-hostname'] == 'seed'  # the filename without its extension


def test_a_checksum_mismatch_fails_with_both_checksums_and_leaves_no_file(lab, tmp_path):
    url, sums = lab.serve('tools.iso', TOOLS_ISO)
    wrong = 'f' * 64
    run = run_playbook(tmp_path, play(iso_task('mismatch', node='pve1', filename='tools.iso', url=url, checksum='sha256:' + wrong)), lab.env)
    assert run.rc != 0
    message = run.one('mismatch')['msg']
    assert sums['sha256'] in message and wrong in message and 'checksum mismatch' in message
    listing = lab.call(lambda: lab.pve._volumes('local'))
    assert 'iso/tools.iso' not in listing
    assert recorded(lab, 'pve1') == {}


def test_uploads_captured_from_src_and_seed_runs_parse_with_pves_multipart_rules(lab, tmp_path):
    src = tmp_path / 'src.iso'
    src.write_bytes(images.iso('SRC', {'src.txt': b'src\n'}))
    run = run_playbook(
        tmp_path,
        play(iso_task('src', node='pve1', filename='src.iso', src=str(src)), iso_task('seed', node='pve1', filename='seed.iso', seed={'user_data': USER_DATA})),
        lab.env,
    )
    assert run.rc == 0, run.stdout
    for volid in ('local:iso/src.iso', 'local:iso/seed.iso'):
        assert_pve_ordered_upload(lab, volid)


def test_a_plain_tar_container_template_is_downloaded_as_vztmpl(lab, tmp_path):
    url, sums = lab.serve('alpine-3.22-default_20250617_amd64.tar', b'an uncompressed container template')
    task = iso_task('tar', node='pve1', content='vztmpl', filename='alpine-3.22-default_20250617_amd64.tar', url=url, checksum='sha256:' + sums['sha256'])
    run = run_playbook(tmp_path, play(task), lab.env)
    assert run.rc == 0, run.stdout
    assert run.one('tar')['volid'] == 'local:vztmpl/alpine-3.22-default_20250617_amd64.tar'
    assert lab.volume_bytes('local:vztmpl/alpine-3.22-default_20250617_amd64.tar') == b'an uncompressed container template'


@pytest.mark.lab(time_scale=1)
def test_a_checksum_mismatch_never_deletes_a_file_another_run_stored_meanwhile(lab, tmp_path):
    url, sums = lab.serve('tools.iso', TOOLS_ISO)  # a lab download takes 5 s at time_scale 1
    wrong = 'f' * 64
    task = iso_task('mismatch', node='pve1', filename='tools.iso', url=url, checksum='sha256:' + wrong)
    runs = []
    worker = threading.Thread(target=lambda: runs.append(run_playbook(tmp_path, play(task), lab.env)))
    worker.start()
    try:
        assert wait_until(lambda: any(w.path.endswith('/download-url') for w in lab.writes()), timeout=60)

        def another_run():  # stores the same name while this run's download is under way
            lab.pve.store_file('local', 'tools.iso', 5, 'iso')
            lab.pve.volume_data['local:iso/tools.iso'] = b'other'

        lab.call(another_run)
    finally:
        worker.join()
    [run] = runs
    assert run.rc != 0
    assert [w.method for w in lab.writes() if w.method == 'DELETE'] == []
    assert lab.volume_bytes('local:iso/tools.iso') == b'other', "the other run's file is kept"
    message = run.one('mismatch')['msg']
    assert sums['sha256'] in message and wrong in message and 'this run stored nothing' in message


def test_absent_deletes_on_each_node_forgets_the_record_and_keeps_the_human_notes(lab, tmp_path):
    url, sums = lab.serve('tools.iso', TOOLS_ISO)
    human = 'Rack 4, row B.\nAsk ops before rebooting.'
    lab.call(lambda: lab.pve.node_configs.setdefault('pve1', {}).update(description=human.split('\n')))
    present = play(
        iso_task('present', nodes=['pve1', 'pve2'], filename='tools.iso', url=url, checksum='sha256:' + sums['sha256']),
        iso_task('seed', node='pve1', filename='seed.iso', seed={'user_data': USER_DATA}),
    )
    setup = run_playbook(tmp_path, present, lab.env, name='present')
    assert setup.rc == 0, setup.stdout
    assert node_notes(lab, 'pve1').startswith(human + '\n\n[puls-files: ')

    absent = play(
        iso_task('absent', nodes=['pve1', 'pve2'], filename='tools.iso', state='absent'), iso_task('seed', node='pve1', filename='seed.iso', state='absent')
    )
    runs = four_runs(tmp_path, absent, lab.env)
    assert runs.real.one('absent')['action'] == {'pve1': 'delete', 'pve2': 'delete'}
    assert runs.real.one('absent')['diff']['after'] == {'pve1': {}, 'pve2': {}}
    assert runs.real_again.one('absent')['action'] == {'pve1': 'none', 'pve2': 'none'}
    listing = lab.call(lambda: lab.pve._volumes('local'))
    assert 'iso/tools.iso' not in listing and 'iso/seed.iso' not in listing
    assert recorded(lab, 'pve1') == recorded(lab, 'pve2') == {}
    assert node_notes(lab, 'pve1') == human


def test_bad_input_fails_naming_the_option_and_writes_nothing(lab, tmp_path):
    def add_storage():
        lab.pve.storages['isos-only'] = {'type': 'dir', 'active': 1, 'content': 'iso', 'files': set(), 'path': '/srv/isos'}

    lab.call(add_storage)
    url, sums = lab.serve('tools.iso', TOOLS_ISO)
    sha256 = sums['sha256']
    cases = {
        'two sources': ({'filename': 'a.iso', 'url': url, 'src': str(tmp_path / 'a.iso')}, 'url, src, seed: give exactly one source'),
        'no source': ({'filename': 'a.iso'}, 'got none'),
        'checksum without algorithm': ({'filename': 'a.iso', 'url': url, 'checksum': sha256}, 'has no algorithm: write it as ALGO:HEX'),
        'checksum of the wrong length': (
            {'filename': 'a.iso', 'url': url, 'checksum': 'sha256:' + sha256[:-1]},
            'checksum: a sha256 digest has 64 hex digits, this one has 63',
        ),
        'unknown algorithm': ({'filename': 'a.iso', 'url': url, 'checksum': 'sha3:' + sha256}, "checksum: unknown algorithm 'sha3'"),
        'compression on import': (
            {'filename': 'a.qcow2', 'content': 'import', 'url': url, 'compression': 'gz'},
            'compression: Proxmox VE decompresses ISO images only',
        ),
        'a path in the filename': ({'filename': 'isos/a.iso', 'url': url}, "filename: 'isos/a.iso' contains a path separator"),
        'a wrong extension': ({'filename': 'a.qcow2', 'url': url}, "filename: 'a.qcow2' does not fit content iso"),
        'user-data that is not YAML': ({'filename': 's.iso', 'seed': {'user_data': '#cloud-config\npackages: [nginx\n'}}, 'seed.user_data: is not valid YAML'),
        'user-data of no known kind': ({'filename': 's.iso', 'seed': {'user_data': 'packages: [nginx]\n'}}, 'seed.user_data: must start with one of'),
        'a storage that does not exist': ({'filename': 'a.iso', 'url': url, 'storage': 'nosuch'}, "storage: 'nosuch' does not exist"),
        'a storage that cannot hold files': (
            {'filename': 'a.iso', 'url': url, 'storage': 'local-lvm'},
            'storage: local-lvm is a lvmthin storage, which cannot hold iso files',
        ),
        'a storage without the content type': (
            {'filename': 'a.qcow2', 'content': 'import', 'url': url, 'storage': 'isos-only'},
            'storage: isos-only is not configured for content import (it holds iso); enable it with: pvesm set isos-only --content iso,import',
        ),
        'an unknown node': ({'filename': 'a.iso', 'url': url, 'nodes': ['pve1', 'pve9']}, "nodes: 'pve9' is not a node of this cluster"),
        'a src that does not exist': ({'filename': 'a.iso', 'src': str(tmp_path / 'missing.iso')}, 'src: cannot read'),
    }
    tasks = [
        dict(iso_task(name, **dict({'node': 'pve1'} if 'nodes' not in options else {}, **options)), ignore_errors=True)
        for name, (options, _message) in cases.items()
    ]
    run = run_playbook(tmp_path, play(*tasks), lab.env)
    assert run.rc == 0, run.stdout
    for name, (_options, message) in cases.items():
        [outcome] = run.for_task(name)
        assert outcome['status'] == 'failed' and message in outcome['result']['msg'], (name, outcome)
    assert lab.writes() == []


def test_a_missing_privilege_is_named(lab, tmp_path):
    def users():
        for user in ('reader@pve', 'uploader@pve'):
            lab.pve.users[user] = 'Pass-word-1'
            lab.pve.grant(user, '/', 'Sys.Audit')
            lab.pve.grant(user, '/storage/local', 'Datastore.Audit')
        lab.pve.grant('uploader@pve', '/storage/local', 'Datastore.AllocateTemplate')

    lab.call(users)
    url, sums = lab.serve('tools.iso', TOOLS_ISO)
    src = tmp_path / 'up.iso'
    src.write_bytes(TOOLS_ISO)
    download = iso_task('download', node='pve1', filename='tools.iso', url=url, checksum='sha256:' + sums['sha256'])
    upload = iso_task('upload', node='pve1', filename='up.iso', src=str(src))
    messages = {}
    for user in ('reader@pve', 'uploader@pve'):
        env = dict(lab.env, PROXMOX_USER=user, PROXMOX_PASSWORD='Pass-word-1', PROXMOX_TOKEN_NAME='', PROXMOX_TOKEN_SECRET='')
        run = run_playbook(tmp_path, play(dict(download, ignore_errors=True), dict(upload, ignore_errors=True)), env, name=user)
        messages[user] = [outcome['result']['msg'] for outcome in run.for_task('download') + run.for_task('upload')]
    assert all(
        'Permission check failed (/storage/local, Datastore.AllocateTemplate)' in message
        and 'grant Datastore.AllocateTemplate on /storage/local to user reader@pve' in message
        for message in messages['reader@pve']
    )
    # Allowed to upload, the uploader still cannot have the node download, nor record the upload in the node's notes:
    # refused before the upload (docs/privileges.md).
    download_message, upload_message = messages['uploader@pve']
    assert 'Permission check failed (/, Sys.Modify)' in download_message
    assert upload_message.startswith('the plan for local:iso/up.iso refused before any change: user uploader@pve lacks privileges')
    assert 'Permission check failed (/, Sys.Modify) to record the file in the notes of pve1' in upload_message
    assert lab.writes() == []


def test_the_examples_run_against_the_lab_and_their_user_data_passes_cloud_inits_schema(lab, tmp_path):
    """The module's EXAMPLES as they are, but for what the lab cannot reach: each URL becomes a lab-served file of the
    same kind (the checksum follows it, with the example's algorithm) and each src a local file."""
    served = {'.img': NOBLE_IMG, '.gz': TOOLS_ISO_GZ}
    tasks = yaml.safe_load(pve_iso.EXAMPLES)
    seeds = []
    for task in tasks:
        options = task.get('puls.proxmox.pve_iso', {})
        if 'url' in options:
            name = options['url'].rsplit('/', 1)[1]
            options['url'], sums = lab.serve(name, served[name[name.rindex('.') :]])
            algorithm = options['checksum'].split(':', 1)[0]
            options['checksum'] = '%s:%s' % (algorithm, sums[algorithm])
        if 'src' in options:
            src = tmp_path / options['src'].rsplit('/', 1)[1]
            src.write_bytes(TOOLS_ISO)
            options['src'] = str(src)
        if 'seed' in options:
            seeds.append(options['seed']['user_data'])
    run = run_playbook(tmp_path, play(*tasks), lab.env)
    assert run.rc == 0, run.stdout
    assert not run.failed
    assert run.one('Show the volume VMs import from')['msg'] == 'import-from=local:import/noble-server-cloudimg-amd64.qcow2'
    assert lab.volume_bytes('local:iso/rescue.iso') == TOOLS_ISO
    assert 'iso/virtio-win.iso' not in lab.call(lambda: lab.pve._volumes('local'))
    assert seeds
    for index, user_data in enumerate(seeds):
        path = tmp_path / f'user-data-{index}.yaml'
        path.write_text(user_data)
        schema = subprocess.run(['cloud-init', 'schema', '--config-file', str(path)], capture_output=True, text=True, check=False)
        assert schema.returncode == 0, schema.stdout + schema.stderr


@pytest.mark.lab(time_scale=1)
def test_the_timeout_is_a_deadline_for_the_download(lab, tmp_path):
    url, sums = lab.serve('tools.iso', TOOLS_ISO)  # a lab download takes 5 s at time_scale 1
    task = iso_task('slow', node='pve1', filename='tools.iso', url=url, checksum='sha256:' + sums['sha256'], timeout=1)
    run = run_playbook(tmp_path, play(task), lab.env)
    assert run.rc != 0
    message = run.one('slow')['msg']
    assert message.startswith('timeout: the 1 s of the timeout option were up: downloading %s to storage local of node pve1' % url)
    assert 'it may still be running' in message
    assert recorded(lab, 'pve1') == {}
