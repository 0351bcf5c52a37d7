# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure half of the leases (_lease_plan): the record line in a node's notes, and what acquire and release decide."""

from __future__ import annotations

import dataclasses
import json

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils import _lease_io, _lease_plan, _progress
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError

NOW = 1_764_620_000
HUMAN = 'Rack 4, row B.\n\n[puls-files: local:iso/a.iso=0123456789ab]'
MINE, OTHER = 'run-a', 'run-b'


def holder(run, expires, controller='awx-1'):
    return _lease_plan.Holder(run, controller, expires)


def test_the_record_round_trips_as_one_line_and_keeps_every_other_character():
    leases = {'template/web-golden': holder(MINE, NOW + 900), 'vm/web1': holder(OTHER, NOW + 60, 'laptop.example')}
    notes = _lease_plan.render(HUMAN, leases, 64 * 1024)
    assert notes == (HUMAN + '\n\n[puls-leases: template/web-golden=run-a@awx-1:1764620900,vm/web1=run-b@laptop.example:1764620060]')
    assert _lease_plan.parse(notes) == leases
    assert _lease_plan.render(notes, {}, 64 * 1024) == HUMAN
    assert _lease_plan.parse(HUMAN) == {} and _lease_plan.parse(None) == {}


def test_a_free_lease_is_taken_until_now_plus_ttl_and_renewed_by_its_run():
    taken = _lease_plan.acquire({}, ['vm/web1'], MINE, 'awx-1', NOW, 900)
    assert taken == _lease_plan.Decision(True, {'vm/web1': holder(MINE, NOW + 900)})
    renewed = _lease_plan.acquire(taken.leases, ['vm/web1'], MINE, 'awx-1', NOW + 300, 900)
    assert renewed.acquired and renewed.leases == {'vm/web1': holder(MINE, NOW + 1200)} and renewed.taken_over is None


def test_another_runs_live_lease_is_not_taken_and_names_its_holder():
    leases = {'template/web-golden': holder(OTHER, NOW + 1, 'laptop')}
    refused = _lease_plan.acquire(leases, ['template/web-golden'], MINE, 'awx-1', NOW, 900)
    assert refused == _lease_plan.Decision(False, None, held_by=holder(OTHER, NOW + 1, 'laptop'), key='template/web-golden')
    assert refused.held_by.describe(NOW) == {'run_id': OTHER, 'controller': 'laptop', 'expires': NOW + 1, 'expires_in': 1}
    assert _lease_plan.others(leases, MINE, NOW) == leases and _lease_plan.others(leases, OTHER, NOW) == {}


def test_an_expired_lease_is_taken_over_naming_the_dead_run():
    leases = {'template/web-golden': holder(OTHER, NOW, 'laptop')}
    taken = _lease_plan.acquire(leases, ['template/web-golden'], MINE, 'awx-1', NOW, 900)
    assert taken.acquired and taken.taken_over == holder(OTHER, NOW, 'laptop') and taken.key == 'template/web-golden'
    assert taken.leases == {'template/web-golden': holder(MINE, NOW + 900)}
    assert _lease_plan.others(leases, MINE, NOW) == {}


def test_a_write_drops_expired_leases_except_those_marking_a_build_left_behind():
    leases = {
        'template/old-golden': holder(OTHER, NOW - 5),
        'vm/gone': holder(OTHER, NOW - 5),
        'prune': holder(OTHER, NOW - 1),
        'vm/busy': holder(OTHER, NOW + 5),
    }
    taken = _lease_plan.acquire(leases, ['vm/web1'], MINE, 'awx-1', NOW, 60)
    assert list(taken.leases) == ['template/old-golden', 'vm/busy', 'vm/web1']


def test_release_drops_only_the_runs_own_lease():
    leases = {'vm/web1': holder(MINE, NOW + 60), 'vm/web2': holder(OTHER, NOW + 60)}
    assert _lease_plan.release(leases, ['vm/web1'], MINE, NOW) == {'vm/web2': holder(OTHER, NOW + 60)}
    assert _lease_plan.release(leases, ['vm/web2'], MINE, NOW) is None
    assert _lease_plan.release(leases, ['vm/web3'], MINE, NOW) is None
    # Even an expired lease of another run stays: its run may still end it.
    assert _lease_plan.release({'vm/web1': holder(OTHER, NOW - 1)}, ['vm/web1'], MINE, NOW) is None


def test_several_leases_are_taken_all_together_or_none_while_another_run_holds_one():
    leases = {'vm/web2': holder(OTHER, NOW + 60, 'laptop'), 'vm/web9': holder(OTHER, NOW + 60, 'laptop')}
    refused = _lease_plan.acquire(leases, ['vm/web1', 'vm/web2', 'vm/web3'], MINE, 'awx-1', NOW, 900)
    # None taken, not even the free web1 and web3: this run holds nothing the other may wait for.
    assert refused == _lease_plan.Decision(False, None, held_by=holder(OTHER, NOW + 60, 'laptop'), key='vm/web2')
    taken = _lease_plan.acquire(leases, ['vm/web1', 'vm/web3'], MINE, 'awx-1', NOW, 900)
    assert taken.acquired and taken.taken_over is None
    assert taken.leases == dict(leases, **{'vm/web1': holder(MINE, NOW + 900), 'vm/web3': holder(MINE, NOW + 900)})
    assert _lease_plan.release(taken.leases, ['vm/web1', 'vm/web3', 'vm/web9'], MINE, NOW) == leases


def test_of_several_leases_an_expired_one_is_taken_over_naming_its_key():
    leases = {'vm/web2': holder(OTHER, NOW - 1, 'laptop')}
    taken = _lease_plan.acquire(leases, ['vm/web1', 'vm/web2'], MINE, 'awx-1', NOW, 900)
    assert taken.acquired and (taken.key, taken.taken_over) == ('vm/web2', holder(OTHER, NOW - 1, 'laptop'))


def test_the_lease_node_is_the_lowest_named_online_node():
    nodes = [{'node': 'pve3', 'status': 'online'}, {'node': 'pve1', 'status': 'offline'}, {'node': 'pve2', 'status': 'online'}]
    assert _lease_plan.lease_node(nodes) == 'pve2'
    assert _lease_plan.lease_node([{'node': 'pve1', 'status': 'offline'}]) is None


@pytest.mark.parametrize('key', ['template/', 'vm/a,b', 'vm/a=b', 'host/web1', 'prune/x', 'vm/' + 'a' * 65, ''])
def test_a_key_that_is_no_lease_key_is_refused_naming_it(key):
    with pytest.raises(ValueError, match='is not a lease key: give template/NAME, vm/NAME, replace/NAME'):
        _lease_plan.validate_key(key)


def test_keys_and_run_ids_and_controllers_as_a_lease_holds_them():
    for key in ('template/web-golden', 'vm/web1.example', 'replace/old_web', 'prune'):
        assert _lease_plan.validate_key(key) == key
    with pytest.raises(ValueError, match="run_id 'job 12' must be 1 to 64 letters"):
        _lease_plan.validate_run_id('job 12')
    assert _lease_plan.controller_name('my laptop:1') == 'my-laptop-1' and _lease_plan.controller_name('') == 'unknown'


def test_a_line_another_tool_wrote_in_another_shape_is_left_as_human_text():
    notes = '[puls-leases: vm/web1=not a holder]'
    assert _lease_plan.parse(notes) == {}
    assert _lease_plan.render(notes, {'vm/web1': holder(MINE, NOW)}, 64 * 1024) == notes + '\n\n[puls-leases: vm/web1=run-a@awx-1:1764620000]'


# ------------------------------------------------------------------------------------- the I/O half (_lease_io)
DIGEST_CHANGED = 'detected modified configuration - file changed by other user? Try again.'


class ClusterStub:
    """GET /nodes, GET /access/permissions, and GET and PUT of pve1's config as PVE keeps it: an empty file reads back
    as {} without a digest (pve-manager PVE/NodeConfig.pm load_config), and a write's digest is checked only when both
    are set (pve-common PVE/Tools.pm assert_if_modified); `meddle` changes the notes before the next PUT lands, as
    another run's write would."""

    def __init__(self, description=''):
        self.description, self.options, self.version, self.puts, self.meddle = description, {}, 0, [], []

    def get(self, path, context=None, **params):
        if path == '/nodes':
            return [{'node': 'pve2', 'status': 'online'}, {'node': 'pve1', 'status': 'online'}]
        if path == '/access/permissions':
            return {'/': {'Sys.Audit': 1, 'Sys.Modify': 1}}
        assert path == '/nodes/pve1/config'
        if not self.description and not self.options:
            return {}
        return dict(self.options, description=self.description, digest=f'digest-{self.version}')

    def put(self, path, context=None, idempotent=False, **params):
        assert path == '/nodes/pve1/config'
        self.puts.append(params)
        if self.meddle:
            self.description = self.meddle.pop(0)(self.description)
            self.version += 1
        stored = f'digest-{self.version}' if self.description or self.options else None
        if params.get('digest') and stored and params['digest'] != stored:
            raise PveApiError(f'{context} failed (HTTP 500): {DIGEST_CHANGED}', reason=DIGEST_CHANGED, status=500)
        self.options.update((key, value) for key, value in params.items() if key not in ('description', 'delete', 'digest'))
        if 'description' in params or params.get('delete') == 'description':
            self.description = params.get('description', '')
        self.version += 1


def lease_of(state='acquired', run=MINE, key='template/web-golden', ttl=900):
    return _lease_io.LeaseRequest((key,), run, state, ttl)


def reconcile(stub, request, check_mode=False):
    return _lease_io.reconcile(stub, request, check_mode, now=lambda: NOW, hostname=lambda: 'awx 1')


def test_a_lease_is_written_into_the_lowest_named_online_nodes_notes_with_the_digest_of_the_read():
    stub = ClusterStub(HUMAN)
    taken = reconcile(stub, lease_of())
    assert taken['acquired'] and taken['changed'] and taken['node'] == 'pve1' and taken['controller'] == 'awx-1'
    assert stub.puts == [{'digest': 'digest-0', 'description': HUMAN + '\n\n[puls-leases: template/web-golden=run-a@awx-1:1764620900]'}]
    released = reconcile(stub, lease_of('released'))
    assert released['changed'] and not released['acquired'] and stub.description == HUMAN


def test_of_two_runs_racing_for_a_lease_the_one_whose_write_lands_second_reads_again_and_is_refused():
    stub = ClusterStub()
    stub.meddle.append(lambda notes: _lease_plan.render(notes, {'template/web-golden': holder(OTHER, NOW + 900, 'laptop')}, 65536))
    refused = reconcile(stub, lease_of())
    assert not refused['acquired'] and not refused['changed'] and len(stub.puts) == 1
    assert refused['held_by'] == {'key': 'template/web-golden', 'run_id': OTHER, 'controller': 'laptop', 'expires': NOW + 900, 'expires_in': 900}
    assert _lease_plan.parse(stub.description) == {'template/web-golden': holder(OTHER, NOW + 900, 'laptop')}


def test_of_two_runs_that_both_read_an_empty_config_the_one_whose_write_lands_second_does_not_take_the_lease():
    # The empty config is read without a digest, and PVE would take a write with none: the run first gives the file
    # one option (alone, replacing nothing), then reads again with a digest and finds the other run's lease.
    stub = ClusterStub()
    stub.meddle.append(lambda notes: _lease_plan.render(notes, {'template/web-golden': holder(OTHER, NOW + 900, 'laptop')}, 65536))
    refused = reconcile(stub, lease_of())
    assert stub.puts == [{'startall-onboot-delay': 0}]
    assert not refused['acquired'] and refused['held_by']['run_id'] == OTHER
    assert _lease_plan.parse(stub.description) == {'template/web-golden': holder(OTHER, NOW + 900, 'laptop')}


def test_a_lease_on_an_empty_config_is_written_with_a_digest_and_its_release_leaves_the_config_not_empty():
    stub = ClusterStub()
    taken = reconcile(stub, lease_of())
    assert taken['acquired'] and stub.puts == [
        {'startall-onboot-delay': 0},
        {'digest': 'digest-1', 'description': '[puls-leases: template/web-golden=run-a@awx-1:1764620900]'},
    ]
    released = reconcile(stub, lease_of('released'))
    assert released['changed'] and stub.puts[-1] == {'digest': 'digest-2', 'delete': 'description'}
    assert stub.get('/nodes/pve1/config') == {'startall-onboot-delay': 0, 'description': '', 'digest': 'digest-3'}


def test_notes_alone_deleted_keep_the_config_not_empty():
    # Leases a release before this one wrote into a config that held nothing else: the release sends the option along.
    stub = ClusterStub(_lease_plan.render('', {'template/web-golden': holder(MINE, NOW + 900)}, 65536))
    reconcile(stub, lease_of('released'))
    assert stub.puts == [{'digest': 'digest-0', 'delete': 'description', 'startall-onboot-delay': 0}]
    assert stub.get('/nodes/pve1/config')['digest'] == 'digest-1'


def test_check_mode_on_an_empty_config_writes_nothing():
    stub = ClusterStub()
    planned = reconcile(stub, lease_of(), check_mode=True)
    assert planned['acquired'] and planned['changed'] and stub.puts == []


def test_check_mode_takes_nothing_and_says_whether_the_lease_would_be_taken():
    stub = ClusterStub(_lease_plan.render('', {'template/web-golden': holder(OTHER, NOW - 1, 'laptop')}, 65536))
    planned = reconcile(stub, lease_of(), check_mode=True)
    assert planned['acquired'] and planned['changed'] and planned['taken_over']['run_id'] == OTHER
    assert stub.puts == []


class Clock:
    """The lease's time: sleeping moves it on."""

    def __init__(self):
        self.now, self.slept = NOW, []

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_a_wait_looks_again_every_delay_until_the_holders_lease_expires_and_notes_who_holds_it(tmp_path):
    stub = ClusterStub(_lease_plan.render('', {'template/web-golden': holder(OTHER, NOW + 25, 'laptop')}, 65536))
    stub.progress = _progress.ProgressNotes(str(tmp_path / 'notes.jsonl'))
    clock = Clock()
    request = _lease_io.LeaseRequest(('template/web-golden',), MINE, 'acquired', 900, wait=60, wait_delay=10)
    taken = _lease_io.reconcile(stub, request, False, now=lambda: clock.now, hostname=lambda: 'awx 1', sleep=clock.sleep)
    assert taken['acquired'] and taken['taken_over']['run_id'] == OTHER and taken['waited'] == 30 and clock.slept == [10, 10, 10]
    notes = [json.loads(line) for line in (tmp_path / 'notes.jsonl').read_text().splitlines()]
    assert [(n['what'], n['started']) for n in notes] == [(f'waiting for the lease template/web-golden, held by run {OTHER} on controller laptop', NOW)] * 3


def test_a_wait_that_runs_out_answers_as_without_waiting_with_the_seconds_waited():
    stub = ClusterStub(_lease_plan.render('', {'template/web-golden': holder(OTHER, NOW + 900, 'laptop')}, 65536))
    clock = Clock()
    request = _lease_io.LeaseRequest(('template/web-golden',), MINE, 'acquired', 900, wait=25, wait_delay=10)
    refused = _lease_io.reconcile(stub, request, True, now=lambda: clock.now, hostname=lambda: 'awx 1', sleep=clock.sleep)
    assert not refused['acquired'] and refused['held_by']['run_id'] == OTHER and refused['waited'] == 25 and clock.slept == [10, 10, 5]
    assert stub.puts == []


def test_several_leases_are_one_write_of_the_record_and_the_result_names_them_as_keys(tmp_path):
    stub = ClusterStub(HUMAN)
    request = _lease_io.LeaseRequest.from_params({'keys': ['vm/web1', 'vm/web2', 'vm/web1'], 'key': None, 'run_id': MINE, 'state': 'acquired', 'ttl': 900})
    taken = reconcile(stub, request)
    assert taken['acquired'] and taken['lease_keys'] == ['vm/web1', 'vm/web2'] and 'key' not in taken and len(stub.puts) == 1
    assert taken['diff'] == {'before': '', 'after': 'vm/web1=run-a@awx-1:1764620900\nvm/web2=run-a@awx-1:1764620900\n'}
    released = reconcile(stub, dataclasses.replace(request, state='released'))
    assert released['changed'] and len(stub.puts) == 2 and stub.description == HUMAN


def test_a_wait_for_several_leases_notes_the_one_held_and_that_they_are_taken_together(tmp_path):
    stub = ClusterStub(_lease_plan.render('', {'vm/web2': holder(OTHER, NOW + 15, 'laptop')}, 65536))
    stub.progress = _progress.ProgressNotes(str(tmp_path / 'notes.jsonl'))
    clock = Clock()
    request = _lease_io.LeaseRequest(('vm/web1', 'vm/web2'), MINE, 'acquired', 900, wait=60, wait_delay=10, several=True)
    taken = _lease_io.reconcile(stub, request, False, now=lambda: clock.now, hostname=lambda: 'awx 1', sleep=clock.sleep)
    assert taken['acquired'] and taken['waited'] == 20 and _lease_plan.parse(stub.description).keys() == {'vm/web1', 'vm/web2'}
    notes = [json.loads(line)['what'] for line in (tmp_path / 'notes.jsonl').read_text().splitlines()]
    assert notes == [f'waiting for the lease vm/web2 (one of the 2 leases taken together), held by run {OTHER} on controller laptop'] * 2
