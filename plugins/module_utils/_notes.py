# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The managed provision block in a VM's Notes (the PVE ``description``), and nothing else of the Notes.

The block is one line of its own, ``[puls-provision: KEY=HASH,KEY=HASH]``: keys are provision file
paths, hashes lower-case hex. Puls wrote the same shape with basenames as keys, so its blocks parse
as they are. Other managed blocks of the same shape pass their own ``tag`` and notes limit (pve_iso
keeps ``[puls-files: VOLID=HASH,...]`` in a node's notes). Every other character of the Notes
belongs to humans and is kept byte for byte, except trailing whitespace, which PVE strips on every
write (qemu-server ``PVE/QemuServer.pm``, ``parse_vm_config``): what this module returns is already stripped, and ``same_notes`` compares
stripped texts.

Pure: strings in, strings out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import NamedTuple

MAX_NOTES_LENGTH = 8192  # PVE refuses a longer description: "value may only be 8192 characters long"

PROVISION_TAG = 'puls-provision'
_KEY = r'[^,=\]\s][^,=\]\r\n]*'  # no leading blank, so blanks after ':' and ',' are never part of a key
_HASH = r'[0-9a-f]+'


class ProvisionKeyError(ValueError):
    """A provision path that the block cannot hold. ``path`` is that path, and the message names it."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f'provision file {path!r} {problem}')
        self.path = path


class NotesTooLongError(ValueError):
    """The Notes with the block would exceed PVE's limit. ``length`` is their length, ``excess`` the overshoot."""

    def __init__(self, length: int, block_length: int, max_length: int = MAX_NOTES_LENGTH) -> None:
        self.length = length
        self.excess = length - max_length
        super().__init__(
            f'the Notes would be {length} characters, {self.excess} over the {max_length} that Proxmox VE allows '
            f'(the managed block takes {block_length}); shorten the Notes or the keys of the block'
        )


class ParsedNotes(NamedTuple):
    """The block's entries in their order (empty without a block) and its ``(start, end)`` in the Notes, or None."""

    entries: dict[str, str]
    span: tuple[int, int] | None


def validate_key(path: str) -> str:
    """Return ``path`` if it can be a key of the block, else raise ``ProvisionKeyError`` naming it."""
    if not isinstance(path, str) or not path.strip():
        raise ProvisionKeyError(str(path), 'must be a non-empty path')
    for char, purpose in (
        (',', 'separate entries'),
        ('=', 'separate a path from its hash'),
        (']', 'close itself'),
        ('\n', 'end its line'),
        ('\r', 'end its line'),
    ):
        if char in path:
            raise ProvisionKeyError(path, f'contains {char!r}, which the Notes block uses to {purpose}; rename the file')
    if path != path.strip():
        raise ProvisionKeyError(path, 'starts or ends with whitespace; rename the file')
    return path


def parse(notes: str | None, tag: str = PROVISION_TAG, value: str = _HASH) -> ParsedNotes:
    """Find the managed block ``[tag: ...]`` in ``notes``; its values match the regular expression ``value``.

    When several lines match, the last one is the block (Puls appended its block at the end, so the
    last is the newest); earlier ones stay human text.
    """
    match = _last_block(notes or '', tag, value)
    if match is None:
        return ParsedNotes({}, None)
    return ParsedNotes(dict(re.findall(_entry(value), match.group('entries'))), match.span('block'))


def render(notes: str | None, entries: Mapping[str, str], tag: str = PROVISION_TAG, max_length: int = MAX_NOTES_LENGTH, value: str = _HASH) -> str:
    """Return ``notes`` with the block ``[tag: ...]`` holding ``entries``, in their order, stripped as PVE stores it.

    The block is replaced where it is, or appended after a blank line when absent; with no entries
    it is removed together with its line break. Raises ``ProvisionKeyError`` for a key or hash the
    block cannot hold and ``NotesTooLongError`` past PVE's limit: human text is never truncated.
    """
    notes = notes or ''
    block = format_block(entries, tag, value) if entries else ''
    match = _last_block(notes, tag, value)
    if match is None:
        human = normalize(notes)
        newline = '\r\n' if '\r\n' in notes else '\n'
        result = f'{human}{newline * 2}{block}' if human and block else human or block
    elif block:
        start, end = match.span('block')
        result = notes[:start] + block + notes[end:]
    else:
        line_end = match.end() + 1 if notes.startswith('\n', match.end()) else match.end()
        result = notes[: match.start()] + notes[line_end:]
    result = normalize(result)
    if len(result) > max_length:
        raise NotesTooLongError(len(result), len(block), max_length)
    return result


def format_block(entries: Mapping[str, str], tag: str = PROVISION_TAG, value: str = _HASH) -> str:
    """The block line for ``entries`` (one or more), after checking every key and value (by default a hash)."""
    for path, file_hash in entries.items():
        validate_key(path)
        if not isinstance(file_hash, str) or not re.fullmatch(value, file_hash):
            raise ProvisionKeyError(
                path,
                f'has hash {file_hash!r}; a hash must be lower-case hex' if value == _HASH else f'has value {file_hash!r}, which is not of the form {value}',
            )
    return f'[{tag}: ' + ','.join(f'{path}={file_hash}' for path, file_hash in entries.items()) + ']'


def normalize(notes: str | None) -> str:
    """The Notes as PVE stores them: trailing whitespace stripped, no Notes as the empty string."""
    return (notes or '').rstrip()


def same_notes(left: str | None, right: str | None) -> bool:
    """Whether two Notes are the same once PVE has stored them."""
    return normalize(left) == normalize(right)


def _entry(value: str) -> str:
    return f'({_KEY})=({value})'


@functools.cache
def _block_line(tag: str, value: str) -> re.Pattern:
    # A block is recognized only as a whole line (blanks around it allowed, and the CR of a CRLF line),
    # so human text that merely mentions "[puls-provision: ...]" inside a sentence is left alone.
    return re.compile(rf'^[ \t]*(?P<block>\[{re.escape(tag)}:[ \t]*(?P<entries>(?:{_entry(value)}(?:,[ \t]*{_entry(value)})*)?)\])[ \t]*\r?$', re.MULTILINE)


def _last_block(notes: str, tag: str, value: str) -> re.Match | None:
    matches = list(_block_line(tag, value).finditer(notes))
    return matches[-1] if matches else None
