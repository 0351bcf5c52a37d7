# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ownership: the owner tag and an owner record in the Notes naming the guest's own VMID, which a clone cannot inherit."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils import _ownership
from ansible_collections.puls.proxmox.plugins.module_utils._notes import NotesTooLongError

HUMAN = 'Web server of team A.\r\n  indented line, kept as written\n\n[puls-provision: base.yml=aaaaaaaaaaaa]'


def test_the_record_names_the_guests_own_vmid_and_keeps_the_human_notes_and_other_blocks_byte_for_byte():
    notes = _ownership.with_record(HUMAN, 'puls-managed', 105)
    assert notes == HUMAN + '\r\n\r\n[puls-owner: puls-managed=105]'
    assert _ownership.state({'tags': 'puls-managed;web', 'description': notes}, 105, 'puls-managed') == _ownership.OWNED


def test_a_clone_inherits_the_tag_and_a_record_naming_its_source_so_it_is_not_owned():
    template = {'tags': 'puls-managed', 'description': _ownership.with_record('', 'puls-managed', 9000)}
    assert _ownership.state(template, 9000, 'puls-managed') == _ownership.OWNED
    assert _ownership.state(template, 120, 'puls-managed') == _ownership.INHERITED
    assert _ownership.recorded_vmid(template['description'], 'puls-managed') == 9000


def test_rewriting_the_record_replaces_it_in_place_and_keeps_the_records_of_other_owner_tags():
    notes = 'hello\n\n[puls-owner: ops-owned=7,puls-managed=9000]\nmore text'
    assert _ownership.with_record(notes, 'puls-managed', 120) == 'hello\n\n[puls-owner: ops-owned=7,puls-managed=120]\nmore text'


@pytest.mark.parametrize(
    'config, expected',
    [
        ({'tags': 'puls-managed'}, _ownership.LEGACY),  # tagged by a release before the record
        ({'tags': 'puls-managed', 'description': '[puls-owner: ops-owned=120]'}, _ownership.LEGACY),  # no record for this tag
        ({'tags': 'web', 'description': '[puls-owner: puls-managed=120]'}, _ownership.FOREIGN),  # the tag was taken off
        ({'tags': 'PULS-Managed', 'description': '[puls-owner: puls-managed=120]'}, _ownership.OWNED),  # tags compare ignoring case
        ({'tags': 'puls-managed', 'description': 'a sentence naming [puls-owner: puls-managed=120] is human text'}, _ownership.LEGACY),
    ],
)
def test_the_four_states_of_a_guest(config, expected):
    assert _ownership.state(config, 120, 'puls-managed') == expected


def test_notes_with_no_room_for_the_record_are_refused_never_truncated():
    with pytest.raises(NotesTooLongError):
        _ownership.with_record('x' * 8180, 'puls-managed', 120)
