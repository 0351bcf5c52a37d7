# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The provision block in a VM's Notes: found only where it is, rewritten alone, human text kept exactly."""

from __future__ import annotations

import random

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._notes import (
    MAX_NOTES_LENGTH,
    NotesTooLongError,
    ProvisionKeyError,
    format_block,
    normalize,
    parse,
    render,
    same_notes,
)

ENTRIES = {'playbooks/base.yml': '3f2a9c1b7d4e', 'site/app.yml': '0c1d2e3f4a5b'}
BLOCK = '[puls-provision: playbooks/base.yml=3f2a9c1b7d4e,site/app.yml=0c1d2e3f4a5b]'
PULS_NOTES = 'Web server, owned by team A.\n\n[puls-provision: base.yml=aaaaaaaaaaaa,app.yml=bbbbbbbbbbbb]'
HUMAN = '\n\n  Ünïcode ✓ notes\twith tabs\r\nand [brackets], [puls-provision] and a\r\n[link](https://example.com/a=b,c)\n'


def without_block(notes: str) -> str:
    """The notes with the block's line removed, found independently of the module under test."""
    return '\n'.join(line for line in notes.split('\n') if not line.rstrip('\r').strip().startswith('[puls-provision: '))


# Finding the block.


def test_notes_without_a_block_have_no_entries():
    assert parse(HUMAN) == ({}, None)
    assert parse(None) == ({}, None)
    assert parse('') == ({}, None)


def test_a_puls_written_block_is_read_with_its_order_and_span():
    entries, span = parse(PULS_NOTES)
    assert list(entries.items()) == [('base.yml', 'aaaaaaaaaaaa'), ('app.yml', 'bbbbbbbbbbbb')]
    assert PULS_NOTES[span[0] : span[1]] == '[puls-provision: base.yml=aaaaaaaaaaaa,app.yml=bbbbbbbbbbbb]'


def test_a_block_in_the_middle_of_crlf_notes_is_found_without_its_line_break():
    notes = f'before\r\n{BLOCK}\r\nafter'
    entries, span = parse(notes)
    assert entries == ENTRIES
    assert notes[span[0] : span[1]] == BLOCK


@pytest.mark.parametrize(
    'notes',
    [
        f'see {BLOCK}',
        f'{BLOCK} <- the old format',
        '[puls-provision: base.yml=NOTHEX]',
        '[puls-provision: base.yml=ABCDEF123456]',
        '[puls-provision: base.yml]',
        '[puls-provision base.yml=aaaaaaaaaaaa]',
        '[puls-provision: a.yml=aaaaaaaaaaaa,]',
        '[puls-provision: a.yml=aaaaaaaaaaaa]]',
        '[Puls-Provision: a.yml=aaaaaaaaaaaa]',
    ],
    ids=['inside-a-sentence', 'text-after', 'not-hex', 'upper-case-hex', 'no-hash', 'no-colon', 'trailing-comma', 'double-bracket', 'other-case'],
)
def test_text_that_merely_looks_like_a_block_is_human_text(notes):
    assert parse(notes) == ({}, None)
    assert render(notes, {}) == notes


def test_an_empty_block_and_blanks_around_a_block_or_its_entries_still_count():
    assert parse('notes\n[puls-provision: ]') == ({}, (6, 24))
    assert parse(f'notes\n \t{BLOCK}\t ').entries == ENTRIES
    assert parse('[puls-provision:a.yml=aaaaaaaaaaaa, b c.yml=bbbbbbbbbbbb]').entries == {'a.yml': 'aaaaaaaaaaaa', 'b c.yml': 'bbbbbbbbbbbb'}


def test_of_several_blocks_the_last_is_the_managed_one():
    notes = f'{BLOCK}\ncopied above by a human\n[puls-provision: new.yml=cccccccccccc]\ntail'
    assert parse(notes).entries == {'new.yml': 'cccccccccccc'}
    assert render(notes, {'new.yml': 'dddddddddddd'}) == f'{BLOCK}\ncopied above by a human\n[puls-provision: new.yml=dddddddddddd]\ntail'


# Writing the block.


def test_absent_block_is_appended_after_a_blank_line():
    assert render('Owned by team A.\n\n', ENTRIES) == f'Owned by team A.\n\n{BLOCK}'
    assert render(None, ENTRIES) == BLOCK
    assert render(' \n\t', ENTRIES) == BLOCK


def test_appended_block_follows_the_notes_crlf_line_breaks():
    assert render('line one\r\nline two\r\n', ENTRIES) == f'line one\r\nline two\r\n\r\n{BLOCK}'


def test_block_in_the_middle_is_replaced_in_place():
    notes = f'\n\nHeader\t[x]\r\n{BLOCK}\r\n\r\nFooter ✓ [y=z,w]'
    result = render(notes, {'playbooks/base.yml': 'ffffffffffff'})
    assert result == '\n\nHeader\t[x]\r\n[puls-provision: playbooks/base.yml=ffffffffffff]\r\n\r\nFooter ✓ [y=z,w]'


def test_entries_are_written_in_the_given_order():
    reordered = dict(reversed(list(ENTRIES.items())))
    assert render('', reordered) == '[puls-provision: site/app.yml=0c1d2e3f4a5b,playbooks/base.yml=3f2a9c1b7d4e]'


@pytest.mark.parametrize(
    'notes, expected',
    [
        (f'Owned by team A.\n\n{BLOCK}', 'Owned by team A.'),
        (f'top\r\n{BLOCK}\r\nbottom', 'top\r\nbottom'),
        (f'{BLOCK}\nbottom', 'bottom'),
        (BLOCK, ''),
        ('no block\n', 'no block'),
    ],
)
def test_no_entries_removes_the_block_with_its_line(notes, expected):
    assert render(notes, {}) == expected


def test_results_are_stripped_as_pve_stores_them_and_compared_stripped():
    assert render('notes \t\r\n\n', ENTRIES) == f'notes\r\n\r\n{BLOCK}'
    assert render(f'{BLOCK}\n\n  ', ENTRIES) == BLOCK
    assert same_notes('notes\n\n', 'notes') and same_notes(None, ' \n') and not same_notes('a', 'a\n.')
    assert normalize('\n  lead stays\n') == '\n  lead stays'


def test_leading_newlines_and_inner_whitespace_are_kept():
    notes = '\n\n\tindented\n\n\nafter blank lines'
    assert render(notes, ENTRIES) == f'{notes}\n\n{BLOCK}'


# PVE's limit.


def test_notes_up_to_the_limit_are_written():
    human = 'x' * (MAX_NOTES_LENGTH - len(BLOCK) - 2)
    assert len(render(human, ENTRIES)) == MAX_NOTES_LENGTH


def test_notes_over_the_limit_fail_saying_by_how_much_and_keep_the_text():
    human = 'x' * (MAX_NOTES_LENGTH - len(BLOCK) - 1)
    with pytest.raises(NotesTooLongError) as raised:
        render(human, ENTRIES)
    assert (raised.value.length, raised.value.excess) == (MAX_NOTES_LENGTH + 1, 1)
    assert '1 over the 8192' in str(raised.value) and f'takes {len(BLOCK)}' in str(raised.value)


def test_removing_the_block_never_fails_on_length():
    assert render('x' * MAX_NOTES_LENGTH, {}) == 'x' * MAX_NOTES_LENGTH


# Keys and hashes the block cannot hold.


@pytest.mark.parametrize(
    'path, problem',
    [
        ('a,b.yml', "contains ','"),
        ('a=b.yml', "contains '='"),
        ('a]b.yml', "contains ']'"),
        ('a\nb.yml', "contains '\\n'"),
        ('a\rb.yml', "contains '\\r'"),
        (' a.yml', 'whitespace'),
        ('', 'non-empty path'),
    ],
)
def test_a_key_the_block_cannot_hold_fails_naming_the_path(path, problem):
    with pytest.raises(ProvisionKeyError) as raised:
        render('notes', {path: 'aaaaaaaaaaaa'})
    assert raised.value.path == path
    assert repr(path) in str(raised.value) and problem in str(raised.value)


@pytest.mark.parametrize('file_hash', ['', 'ABCDEF', 'xyz', None])
def test_a_hash_that_is_not_lower_case_hex_fails_naming_the_path(file_hash):
    with pytest.raises(ProvisionKeyError, match="'site.yml' has hash"):
        format_block({'site.yml': file_hash})


def test_keys_with_spaces_brackets_and_unicode_round_trip():
    entries = {'my playbooks/[x ünï (1).yml': 'aaaaaaaaaaaa', '../up.sh': 'bbbbbbbbbbbb'}
    assert parse(render('notes', entries)).entries == entries


# Human text survives, whatever it holds.


def random_human_text(rng: random.Random) -> str:
    """Human notes full of near-misses of the block, but with no line that is one."""
    pieces = [
        'word',
        ' ',
        '\t',
        '\n',
        '\r\n',
        '[',
        ']',
        '=',
        ',',
        ':',
        'ü',
        '✓',
        '漢',
        '🙂',
        '#',
        '%',
        '\\',
        '[puls-provision',
        '[puls-provision: x=1',
        'puls-provision: a=bbbbbbbbbbbb]',
        f'see {BLOCK}',
    ]
    while True:
        text = ''.join(rng.choices(pieces, k=rng.randrange(0, 120)))
        if parse(text).span is None:
            return text


@pytest.mark.parametrize('seed', range(40))
def test_human_text_is_preserved_exactly_through_every_operation(seed):
    rng = random.Random(seed)
    human = random_human_text(rng)
    written = render(human, ENTRIES)
    rewritten = render(written, {'other/site.yml': 'cccccccccccc'})
    assert parse(written).entries == ENTRIES and parse(rewritten).entries == {'other/site.yml': 'cccccccccccc'}
    assert written.startswith(normalize(human)) and rewritten.startswith(normalize(human))
    assert render(rewritten, {}) == normalize(human)

    above, below = random_human_text(rng), random_human_text(rng)
    middle = f'{above}\n{BLOCK}\n{below}'
    assert parse(middle).entries == ENTRIES
    replaced = render(middle, {'other/site.yml': 'cccccccccccc'})
    assert replaced == normalize(f'{above}\n[puls-provision: other/site.yml=cccccccccccc]\n{below}')
    assert without_block(replaced) == normalize(without_block(middle))
