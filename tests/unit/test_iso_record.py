# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record of declared sources in a node's notes: only its own line changes, written with the digest of the read
and merged again when someone changed the notes in between; and the volume helpers' failure handling."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._files_record import (
    merge,
    parse_record,
    read_notes,
    render_record,
    update_record,
)
from ansible_collections.puls.proxmox.plugins.module_utils._volumes import delete_volume, wait_download

HUMAN = 'Rack 4, row B.\n\n[puls-provision: site.yml=0123456789ab]\nAsk ops before rebooting.'
DIGEST_CHANGED = 'detected modified configuration - file changed by other user? Try again.'


class NodeConfigStub:
    """GET and PUT of /nodes/pve1/config, with a digest (none while the file is empty, pve-manager PVE/NodeConfig.pm
    load_config, and then none checked); `meddle` changes the notes before the next PUT lands."""

    def __init__(self, description=''):
        self.description = description
        self.version = 0
        self.puts = []
        self.meddle = []
        self.anchored = False

    def get(self, path, context=None, **params):
        assert path == '/nodes/pve1/config'
        if not self.description and not self.anchored:
            return {}
        return dict({'startall-onboot-delay': 0} if self.anchored else {}, description=self.description, digest='digest-%d' % self.version)

    def put(self, path, context=None, idempotent=False, **params):
        self.puts.append(params)
        if self.meddle:
            self.description = self.meddle.pop(0)(self.description)
            self.version += 1
        if params.get('digest') and (self.description or self.anchored) and params['digest'] != 'digest-%d' % self.version:
            raise PveApiError('%s failed (HTTP 500): %s' % (context, DIGEST_CHANGED), reason=DIGEST_CHANGED, status=500)
        self.anchored = self.anchored or 'startall-onboot-delay' in params
        if 'startall-onboot-delay' not in params or 'delete' in params:
            self.description = params.get('description', '')
        self.version += 1


def test_the_record_is_its_own_line_among_human_notes():
    notes = render_record(HUMAN, {'local:iso/noble.iso': '3f2a9c1b7d4e', 'nfs-iso:import/debian.qcow2': '0c1d2e3f4a5b'})
    assert notes == HUMAN + '\n\n[puls-files: local:iso/noble.iso=3f2a9c1b7d4e,nfs-iso:import/debian.qcow2=0c1d2e3f4a5b]'
    assert parse_record(notes) == {'local:iso/noble.iso': '3f2a9c1b7d4e', 'nfs-iso:import/debian.qcow2': '0c1d2e3f4a5b'}
    assert parse_record(HUMAN) == {}
    assert render_record(notes, {}) == HUMAN


def test_changes_set_or_drop_entries_in_place():
    entries = {'a:iso/a.iso': '1' * 12, 'b:iso/b.iso': '2' * 12}
    assert list(merge(entries, {'a:iso/a.iso': '3' * 12, 'c:iso/c.iso': '4' * 12}).items()) == [
        ('a:iso/a.iso', '3' * 12),
        ('b:iso/b.iso', '2' * 12),
        ('c:iso/c.iso', '4' * 12),
    ]
    assert merge(entries, {'b:iso/b.iso': None, 'x:iso/x.iso': None}) == {'a:iso/a.iso': '1' * 12}


def test_an_update_is_written_with_the_digest_of_its_read():
    stub = NodeConfigStub(HUMAN)
    assert update_record(stub, 'pve1', {'local:iso/noble.iso': '3f2a9c1b7d4e'})
    assert stub.puts == [{'digest': 'digest-0', 'description': HUMAN + '\n\n[puls-files: local:iso/noble.iso=3f2a9c1b7d4e]'}]
    assert not update_record(stub, 'pve1', {'local:iso/noble.iso': '3f2a9c1b7d4e'})
    assert len(stub.puts) == 1


def test_a_concurrent_change_is_read_again_and_kept():
    stub = NodeConfigStub('[puls-files: local:iso/old.iso=0123456789ab]')
    stub.meddle.append(lambda notes: 'Added by a colleague.\n' + notes.replace('0123456789ab', 'abcdef012345'))
    update_record(stub, 'pve1', {'local:iso/noble.iso': '3f2a9c1b7d4e'})
    assert len(stub.puts) == 2 and stub.puts[1]['digest'] == 'digest-1'
    assert stub.description == 'Added by a colleague.\n[puls-files: local:iso/old.iso=abcdef012345,local:iso/noble.iso=3f2a9c1b7d4e]'


def test_a_record_that_keeps_changing_gives_up_with_pves_message():
    stub = NodeConfigStub()
    stub.meddle.extend([lambda notes: notes + 'x'] * 10)
    with pytest.raises(PveApiError, match='detected modified configuration'):
        update_record(stub, 'pve1', {'local:iso/noble.iso': '3f2a9c1b7d4e'})
    assert len(stub.puts) == 5


def test_the_last_entry_gone_deletes_notes_that_held_only_the_record_and_keeps_the_config_not_empty():
    stub = NodeConfigStub('[puls-files: local:iso/noble.iso=3f2a9c1b7d4e]\n')
    assert read_notes(stub, 'pve1').entries == {'local:iso/noble.iso': '3f2a9c1b7d4e'}
    update_record(stub, 'pve1', {'local:iso/noble.iso': None})
    assert stub.puts == [{'digest': 'digest-0', 'delete': 'description', 'startall-onboot-delay': 0}]
    assert 'digest' in stub.get('/nodes/pve1/config')


def test_a_record_on_an_empty_config_is_written_with_the_digest_of_a_read_after_the_config_got_one():
    stub = NodeConfigStub()
    assert update_record(stub, 'pve1', {'local:iso/noble.iso': '3f2a9c1b7d4e'})
    assert stub.puts == [{'startall-onboot-delay': 0}, {'digest': 'digest-1', 'description': '[puls-files: local:iso/noble.iso=3f2a9c1b7d4e]'}]


class TaskStub:
    """wait_task fails with a task's exit status; the content listing and deletes are recorded."""

    def __init__(self, exitstatus, listed=()):
        self.exitstatus = exitstatus
        self.listed = list(listed)
        self.deleted = []

    def wait_task(self, upid, timeout, context):
        raise PveApiError('%s failed: task ended with: %s' % (context, self.exitstatus), reason=self.exitstatus, exitstatus=self.exitstatus, upid=upid)

    def get(self, path, context=None, **params):
        return [{'volid': volid} for volid in self.listed]

    def delete(self, path, context=None, idempotent=False, **params):
        self.deleted.append(path)
        if 'gone' in path:
            raise PveApiError('%s failed (HTTP 500): volume does not exist' % context, reason="volume 'x' does not exist", status=500)
        self.listed = []


def test_a_checksum_mismatch_names_both_checksums_and_deletes_nothing():
    # PVE removed its temporary file; a file listed under the name is another run's (it stored it meanwhile).
    stub = TaskStub("checksum mismatch: got 'aaaa' != expect 'bbbb'", listed=['local:iso/a.iso'])
    with pytest.raises(PveApiError) as raised:
        wait_download(stub, 'UPID:pve1:1:1:1:download:local:root@pam:', 'pve1', 'local', 'a.iso', 'https://x/a.iso', 'iso')
    assert 'the file at the URL has checksum aaaa, the declared checksum is bbbb; this run stored nothing' in str(raised.value)
    assert stub.deleted == []


def test_a_mismatch_of_a_file_already_there_keeps_it_and_says_so():
    # PVE::Tools::download_file_from_url: the file was at the name before the download began (", aborting").
    stub = TaskStub("checksum mismatch: got 'aaaa' != expect 'bbbb', aborting", listed=['local:iso/a.iso'])
    with pytest.raises(PveApiError) as raised:
        wait_download(stub, 'UPID:pve1:1:1:1:download:local:root@pam:', 'pve1', 'local', 'a.iso', 'https://x/a.iso', 'iso')
    message = str(raised.value)
    assert 'local:iso/a.iso appeared on the storage while this run was at work' in message
    assert 'its checksum aaaa is not the declared bbbb; nothing was downloaded and that file was left alone' in message
    assert stub.deleted == []


def test_another_download_failure_is_passed_on_and_touches_nothing():
    stub = TaskStub("refusing to override existing file '/var/lib/vz/template/iso/a.iso'", listed=['local:iso/a.iso'])
    with pytest.raises(PveApiError, match='refusing to override'):
        wait_download(stub, 'UPID:pve1:1:1:1:download:local:root@pam:', 'pve1', 'local', 'a.iso', 'https://x/a.iso', 'iso')
    assert stub.deleted == []


def test_deleting_a_volume_that_is_gone_is_not_an_error():
    delete_volume(TaskStub('OK'), 'pve1', 'local:iso/gone.iso')
