# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Provision bookkeeping: which declared files are pending, and the entries to record once one has run.

Works on the entries of the Notes block (``_notes.parse(...).entries``), keyed by the provision file
paths as declared. Puls keyed its entries by basename; such an entry still counts when its key is the
basename of exactly one declared path, and the next ``record`` writes it under the full path. When two
declared paths share the basename (``a/site.yml``, ``b/site.yml``), the entry is ambiguous and counts
for neither, so both run again rather than one being skipped wrongly.

Pure: hashing the files (and what they include) is the caller's job; ``short_hash`` is the hash format.
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Mapping, Sequence

from ansible_collections.puls.proxmox.plugins.module_utils._notes import ProvisionKeyError, validate_key

SHORT_HASH_LENGTH = 12  # as Puls wrote them: the first 12 hex digits of the SHA-256


def short_hash(content: bytes) -> str:
    """The hash recorded for a provision file: the first 12 hex digits of the SHA-256 of ``content``."""
    return hashlib.sha256(content).hexdigest()[:SHORT_HASH_LENGTH]


def recorded_hash(path: str, recorded: Mapping[str, str], declared: Sequence[str]) -> str | None:
    """The hash recorded for ``path``: its own entry, else an unambiguous Puls basename entry, else None."""
    if path in recorded:
        return recorded[path]
    basename = posixpath.basename(path)
    if basename in recorded and [posixpath.basename(other) for other in declared].count(basename) == 1:
        return recorded[basename]
    return None


def pending(declared: Sequence[str], recorded: Mapping[str, str], current_hashes: Mapping[str, str], force: bool = False) -> list[str]:
    """The declared files to run, in declared order: new or changed ones, or all of them with ``force``.

    ``current_hashes`` maps every declared path to its hash now. Raises ``ProvisionKeyError`` for a
    path the Notes block cannot hold or one declared twice.
    """
    check_declared(declared)
    return [path for path in declared if force or recorded_hash(path, recorded, declared) != current_hashes[path]]


def record(recorded: Mapping[str, str], path: str, file_hash: str, declared: Sequence[str]) -> dict[str, str]:
    """The entries to write once ``path`` ran with ``file_hash``: see ``record_all``."""
    return record_all(recorded, {path: file_hash}, declared)


def record_all(recorded: Mapping[str, str], applied: Mapping[str, str], declared: Sequence[str]) -> dict[str, str]:
    """The entries to write once each path of ``applied`` ran with its hash: in declared order, keyed by full path.

    Entries of files no longer declared are dropped; files not yet run have none; other declared files
    keep what was recorded. Raises ``ProvisionKeyError`` when a path of ``applied`` is not declared, or
    as ``pending`` does.
    """
    check_declared(declared)
    for path in applied:
        if path not in declared:
            raise ProvisionKeyError(path, 'is not among the declared provision files')
    entries = {}
    for declared_path in declared:
        entry_hash = applied[declared_path] if declared_path in applied else recorded_hash(declared_path, recorded, declared)
        if entry_hash is not None:
            entries[declared_path] = entry_hash
    return entries


def check_declared(declared: Sequence[str]) -> None:
    """Raise ``ProvisionKeyError`` for a path the Notes block cannot hold or one declared twice."""
    seen = set()
    for path in declared:
        validate_key(path)
        if path in seen:
            raise ProvisionKeyError(path, 'is declared twice; each provision file runs once per chain')
        seen.add(path)
