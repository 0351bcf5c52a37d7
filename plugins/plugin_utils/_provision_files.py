# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hashes of provision files, computed on the controller where the files are (the action plugins of
pve_notes_hash and pve_fleet_info): relative to ``base_dir``, with roles found on the configured roles path."""

from __future__ import annotations

from ansible import constants as C

from ansible_collections.puls.proxmox.plugins.module_utils._closure import provision_hashes


def hash_provision_files(files, base_dir, hash_include, hash_mode):
    """(hashes keyed as declared, a warning for each file whose hash misses something it refers to).

    Raises ``ProvisionFileError`` for a file that cannot be read.
    """
    computed = provision_hashes(files, base_dir, C.DEFAULT_ROLES_PATH, hash_include, hash_mode)
    warnings = [
        f'the hash of {path} does not cover {"; ".join(skipped)}; list such files in hash_include so that a change of them is noticed'
        for path, skipped in computed.unresolved.items()
    ]
    return computed.hashes, warnings
