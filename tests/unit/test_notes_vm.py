# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""pve_notes_hash's work: requests checked before any call, the plan of a query or a record, and writes
carrying the digest that re-read and merge when someone changed the Notes meanwhile."""

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._errors import DIGEST_WRITE_ATTEMPTS, PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._notes_io import NotesError, NotesRequest, plan_notes, reconcile

BASE, WEB, DB = 'play/base.yml', 'play/web.yml', 'db.sh'
HASHES = {BASE: 'aaaaaaaaaaaa', WEB: 'bbbbbbbbbbbb', DB: 'cccccccccccc'}
HUMAN = 'Owner: ops [team]\n\n  ünïcödé — line'
PVE_DIGEST = 'detected modified configuration - file changed by other user? Try again.'
FAKEPVE_DIGEST = 'checksum mismatch (file change by other user?)'


def request(state='query', record=None, force=False, files=(BASE, WEB, DB), hashes=None, guest_type='qemu', **vm):
    params = {
        'guest_type': guest_type,
        'name': vm.get('name', 'web1'),
        'vmid': vm.get('vmid'),
        'files': list(files),
        'state': state,
        'record': record,
        'force': force,
        'hashes': HASHES if hashes is None else hashes,
    }
    return NotesRequest.from_params(params)


class FakeClient:
    """One guest (101 on pve1, a VM unless guest_type says lxc) whose config a test edits; PUTs honour the digest as PVE does."""

    def __init__(self, description='', name='web1', guest_type='qemu'):
        self.config = {'name': name, 'description': description}
        self.type = guest_type
        self.puts = []
        self.before_put = None  # called before each PUT lands: a concurrent edit
        self.refusal = PVE_DIGEST

    def digest(self):
        return hashlib.sha1(repr(sorted(self.config.items())).encode()).hexdigest()

    def cluster_vms(self):
        return [{'vmid': 101, 'name': self.config['name'], 'node': 'pve1', 'type': self.type}]

    def get(self, path, *, context=None, **params):
        assert path == '/access/permissions'  # the privilege check before a write (_privileges.require)
        return {'/vms': {'VM.Config.Options': 1}}

    def vm_config(self, node, vmid, current=False, guest_type='qemu'):
        assert (node, vmid, guest_type) == ('pve1', 101, self.type)
        return dict(self.config, digest=self.digest())

    def put(self, path, *, context=None, idempotent=False, digest=None, **params):
        assert path == f'/nodes/pve1/{self.type}/101/config' and idempotent
        self.puts.append(dict(params, digest=digest))
        if self.before_put:
            self.before_put(self)
        if digest != self.digest():
            raise PveApiError('%s failed: %s' % (context, self.refusal), reason=self.refusal, status=500)
        if params.get('delete') == 'description':
            self.config.pop('description', None)
        else:
            self.config['description'] = params['description'].rstrip()


@pytest.mark.parametrize(
    'params, message',
    [
        ({'files': ['a,b.yml']}, "files: provision file 'a,b.yml' contains ','"),
        ({'files': ['x.yml', 'x.yml']}, "files: provision file 'x.yml' is declared twice"),
        ({'files': [BASE], 'record': [WEB]}, "record: 'play/web.yml' is not in files"),
        ({'files': [BASE], 'hashes': {}}, "hashes: no hash (lower-case hex) for 'play/base.yml'"),
        ({'files': [BASE], 'hashes': {BASE: 'ABC'}}, "hashes: no hash (lower-case hex) for 'play/base.yml'"),
    ],
)
def test_a_request_the_block_cannot_hold_is_refused_naming_the_option(params, message):
    with pytest.raises(NotesError) as caught:
        NotesRequest.from_params(dict({'name': 'web1', 'state': 'query', 'hashes': HASHES}, **params))
    assert str(caught.value).startswith(message)


def test_a_query_reports_new_and_changed_files_in_declared_order_and_changes_nothing():
    notes = f'{HUMAN}\n\n[puls-provision: {DB}=cccccccccccc,{BASE}=000000000000]'
    plan = plan_notes(notes, request())
    assert (plan.pending, plan.applied, plan.stale, plan.changed) == ([BASE, WEB], [DB], [], False)


def test_force_makes_every_file_pending_without_changing_what_is_applied():
    plan = plan_notes(f'[puls-provision: {DB}=cccccccccccc]', request(force=True))
    assert (plan.pending, plan.applied) == ([BASE, WEB, DB], [DB])


def test_recording_one_file_keeps_the_other_declared_entries_and_drops_undeclared_ones():
    notes = f'{HUMAN}\n\n[puls-provision: old.yml=111111111111,{DB}=000000000000,{BASE}=aaaaaaaaaaaa]'
    plan = plan_notes(notes, request('applied', record=[WEB]))
    assert plan.after == f'{HUMAN}\n\n[puls-provision: {BASE}=aaaaaaaaaaaa,{WEB}=bbbbbbbbbbbb,{DB}=000000000000]'
    assert (plan.pending, plan.applied, plan.stale, plan.changed) == ([DB], [BASE, WEB], [], True)


def test_a_puls_basename_block_counts_as_applied_and_a_record_rewrites_it_with_full_paths():
    notes = f'{HUMAN}\n[puls-provision: base.yml=aaaaaaaaaaaa,web.yml=bbbbbbbbbbbb]'
    query = plan_notes(notes, request())
    assert (query.pending, query.stale) == ([DB], ['base.yml', 'web.yml'])
    recorded = plan_notes(notes, request('applied', record=[]))
    assert recorded.after == f'{HUMAN}\n[puls-provision: {BASE}=aaaaaaaaaaaa,{WEB}=bbbbbbbbbbbb]'
    assert recorded.stale == []


def test_a_query_fails_when_recording_every_file_would_not_fit_the_notes():
    with pytest.raises(ValueError, match='over the 8192 that Proxmox VE allows'):
        plan_notes('x' * 8150, request())


def test_a_record_writes_with_the_digest_and_keeps_human_notes_byte_for_byte():
    client = FakeClient(HUMAN)
    digest = client.digest()
    result = reconcile(client, request('applied', record=[BASE]))
    assert client.puts == [{'description': f'{HUMAN}\n\n[puls-provision: {BASE}=aaaaaaaaaaaa]', 'digest': digest}]
    assert result['changed'] and result['diff']['before'] == HUMAN and result['diff']['after'] == client.config['description']
    assert (result['pending'], result['applied'], result['vmid'], result['node']) == ([WEB, DB], [BASE], 101, 'pve1')


@pytest.mark.parametrize('refusal', [PVE_DIGEST, FAKEPVE_DIGEST])
def test_a_concurrent_change_is_read_again_and_merged(refusal):
    client = FakeClient(HUMAN)
    client.refusal = refusal

    def someone_edits(vm):
        if len(vm.puts) == 1:
            vm.config['description'] = HUMAN + '\nadded meanwhile\n\n[puls-provision: db.sh=cccccccccccc]'

    client.before_put = someone_edits
    result = reconcile(client, request('applied', record=[BASE]))
    assert client.config['description'] == f'{HUMAN}\nadded meanwhile\n\n[puls-provision: {BASE}=aaaaaaaaaaaa,{DB}=cccccccccccc]'
    assert len(client.puts) == 2 and result['diff']['before'].endswith('added meanwhile\n\n[puls-provision: db.sh=cccccccccccc]')
    assert result['applied'] == [BASE, DB]


def test_a_write_found_done_on_the_re_read_is_not_repeated():
    client = FakeClient(HUMAN)

    def someone_records_the_same(vm):
        vm.config['description'] = f'{HUMAN}\n\n[puls-provision: {BASE}=aaaaaaaaaaaa]'

    client.before_put = someone_records_the_same
    result = reconcile(client, request('applied', record=[BASE]))
    assert len(client.puts) == 1 and not result['changed']


def test_notes_that_keep_changing_fail_after_a_few_attempts_with_pves_message():
    client = FakeClient(HUMAN)
    client.before_put = lambda vm: vm.config.update(description=vm.config['description'] + '.')
    with pytest.raises(PveApiError, match='file changed by other user'):
        reconcile(client, request('applied', record=[BASE]))
    assert len(client.puts) == DIGEST_WRITE_ATTEMPTS


def test_another_refusal_is_not_retried():
    client = FakeClient(HUMAN)
    client.before_put = lambda vm: vm.config.update(lock='backup')
    client.refusal = 'VM is locked (backup)'
    with pytest.raises(PveApiError, match='locked'):
        reconcile(client, request('applied', record=[BASE]))
    assert len(client.puts) == 1


def test_dropping_the_last_entry_deletes_notes_that_held_only_the_block():
    client = FakeClient('[puls-provision: old.yml=111111111111]')
    result = reconcile(client, request('applied', record=[], files=[], hashes={}))
    assert client.puts[0]['delete'] == 'description' and 'description' not in client.config
    assert result['diff']['after'] == ''


def test_check_mode_reports_the_record_and_writes_nothing():
    client = FakeClient(HUMAN)
    result = reconcile(client, request('applied', record=[BASE]), check_mode=True)
    assert client.puts == [] and result['changed'] and result['diff']['after'].endswith(f'{BASE}=aaaaaaaaaaaa]')


def test_a_missing_vm_is_all_pending_in_a_check_mode_query_and_an_error_otherwise():
    client = FakeClient(name='other')
    assert reconcile(client, request(), check_mode=True)['pending'] == [BASE, WEB, DB]
    for state, check_mode in (('query', False), ('applied', True)):
        with pytest.raises(NotesError, match="VM 'web1' does not exist in the cluster"):
            reconcile(client, request(state), check_mode=check_mode)


def test_a_vmid_alone_finds_the_vm_whatever_its_name():
    assert reconcile(FakeClient(name='anything'), request(name=None, vmid=101))['vmid'] == 101


def test_a_container_s_notes_are_found_among_containers_read_and_written_at_its_lxc_path():
    client = FakeClient(HUMAN, name='ct1', guest_type='lxc')
    result = reconcile(client, request('applied', record=[BASE], name='ct1', guest_type='lxc'))
    assert client.config['description'] == f'{HUMAN}\n\n[puls-provision: {BASE}=aaaaaaaaaaaa]'
    assert (result['vmid'], result['pending'], result['diff']['before_header']) == (101, [WEB, DB], 'container 101 Notes')
    with pytest.raises(NotesError, match="VM 'ct1' does not exist"):
        reconcile(client, request(name='ct1'))
