# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Provision bookkeeping: what is pending, what gets recorded, and how a Puls block is taken over."""

from __future__ import annotations

import hashlib

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils import _notes
from ansible_collections.puls.proxmox.plugins.module_utils._notes import ProvisionKeyError
from ansible_collections.puls.proxmox.plugins.module_utils._provision_hash import pending, record, recorded_hash, short_hash

BASE, APP, DB = 'playbooks/base.yml', 'site/app.yml', 'site/db.sh'
DECLARED = [BASE, APP, DB]
CURRENT = {BASE: 'aaaaaaaaaaaa', APP: 'bbbbbbbbbbbb', DB: 'cccccccccccc'}


def test_short_hash_is_the_first_twelve_hex_digits_of_the_sha256():
    assert short_hash(b'') == 'e3b0c44298fc'
    assert short_hash(b'- hosts: all\n') == hashlib.sha256(b'- hosts: all\n').hexdigest()[:12]


def test_everything_is_pending_on_a_fresh_vm_in_declared_order():
    assert pending(DECLARED, {}, CURRENT) == DECLARED


def test_only_new_or_changed_files_are_pending_in_declared_order():
    recorded = {DB: 'cccccccccccc', BASE: 'aaaaaaaaaaaa', APP: '000000000001'}
    assert pending(DECLARED, recorded, CURRENT) == [APP]
    assert pending(DECLARED, {BASE: 'aaaaaaaaaaaa'}, CURRENT) == [APP, DB]
    assert pending(DECLARED, dict(CURRENT), CURRENT) == []


def test_force_makes_every_declared_file_pending():
    assert pending(DECLARED, dict(CURRENT), CURRENT, force=True) == DECLARED


def test_record_writes_declared_order_and_drops_files_no_longer_declared():
    recorded = {'retired.yml': 'dddddddddddd', APP: 'bbbbbbbbbbbb', BASE: '000000000001'}
    assert list(record(recorded, BASE, 'aaaaaaaaaaaa', DECLARED).items()) == [(BASE, 'aaaaaaaaaaaa'), (APP, 'bbbbbbbbbbbb')]


def test_recording_a_chain_one_file_at_a_time_ends_with_every_hash():
    entries = {}
    for path in pending(DECLARED, entries, CURRENT):
        entries = record(entries, path, CURRENT[path], DECLARED)
    assert entries == CURRENT and pending(DECLARED, entries, CURRENT) == []


def test_a_puls_basename_entry_counts_for_the_one_declared_path_and_is_rewritten_in_full():
    recorded = {'base.yml': 'aaaaaaaaaaaa', 'app.yml': '000000000001'}
    assert recorded_hash(BASE, recorded, DECLARED) == 'aaaaaaaaaaaa'
    assert pending(DECLARED, recorded, CURRENT) == [APP, DB]
    assert record(recorded, APP, 'bbbbbbbbbbbb', DECLARED) == {BASE: 'aaaaaaaaaaaa', APP: 'bbbbbbbbbbbb'}


def test_two_declared_files_sharing_a_basename_never_share_an_entry():
    declared = ['a/site.yml', 'b/site.yml']
    current = {'a/site.yml': 'aaaaaaaaaaaa', 'b/site.yml': 'bbbbbbbbbbbb'}
    assert pending(declared, {'site.yml': 'aaaaaaaaaaaa'}, current) == declared
    after_a = record({'site.yml': 'aaaaaaaaaaaa'}, 'a/site.yml', 'aaaaaaaaaaaa', declared)
    assert after_a == {'a/site.yml': 'aaaaaaaaaaaa'}
    assert pending(declared, after_a, current) == ['b/site.yml']


def test_a_basename_entry_belongs_to_the_declared_path_spelled_exactly_so():
    declared = ['site.yml', 'b/site.yml']
    current = {'site.yml': 'aaaaaaaaaaaa', 'b/site.yml': 'bbbbbbbbbbbb'}
    assert pending(declared, {'site.yml': 'aaaaaaaaaaaa'}, current) == ['b/site.yml']


@pytest.mark.parametrize(
    'declared, path, problem',
    [
        (['a.yml', 'a.yml'], 'a.yml', 'is declared twice'),
        (['a,b.yml'], 'a,b.yml', "contains ','"),
        (['ok.yml', 'x=y.yml'], 'x=y.yml', "contains '='"),
    ],
)
def test_declared_paths_the_block_cannot_hold_fail_naming_the_path(declared, path, problem):
    for call in (lambda: pending(declared, {}, dict.fromkeys(declared, 'aaaaaaaaaaaa')), lambda: record({}, declared[0], 'aaaaaaaaaaaa', declared)):
        with pytest.raises(ProvisionKeyError) as raised:
            call()
        assert raised.value.path == path and problem in str(raised.value)


def test_recording_an_undeclared_file_fails_naming_it():
    with pytest.raises(ProvisionKeyError, match="'other.yml' is not among the declared"):
        record({}, 'other.yml', 'aaaaaaaaaaaa', DECLARED)


def test_a_puls_vm_is_taken_over_keeping_its_human_notes():
    puls_notes = 'DB primary — do not reboot on Fridays [ops]\n\n[puls-provision: base.yml=aaaaaaaaaaaa,app.yml=000000000001]'
    recorded = _notes.parse(puls_notes).entries
    todo = pending(DECLARED, recorded, CURRENT)
    assert todo == [APP, DB]
    for path in todo:
        recorded = record(recorded, path, CURRENT[path], DECLARED)
    assert _notes.render(puls_notes, recorded) == (
        'DB primary — do not reboot on Fridays [ops]\n\n[puls-provision: playbooks/base.yml=aaaaaaaaaaaa,site/app.yml=bbbbbbbbbbbb,site/db.sh=cccccccccccc]'
    )
