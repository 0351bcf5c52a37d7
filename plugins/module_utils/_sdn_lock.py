# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The global SDN lock of PVE 9 (libpve-network-perl 1.1.3 and later), pve-network ``src/PVE/API2/Network/SDN.pm``:

- ``POST /cluster/sdn/lock`` (lock): refused with ``configuration has pending changes`` unless ``allow-pending``
  (``SDN.pm`` has_pending_changes: zones, VNets, subnets, controllers), and, like every SDN write while a lock is held,
  with ``invalid lock token provided!`` (``SDN.pm`` lock_sdn_config); it answers the token.
- every write and the apply take ``lock-token``; the apply releases the lock after committing (``release-lock``).
- ``POST /cluster/sdn/rollback`` writes the running config back over the config files and releases the lock;
  ``DELETE /cluster/sdn/lock`` releases it.

PVE 8 has none of it: the lock's route answers 501 (pve-http-server: ``Method ... not implemented``).
"""

from __future__ import annotations

import contextlib

from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._sdn_plan import SdnRefused

LOCK = '/cluster/sdn/lock'


def acquire(client, allow_pending):
    """The lock's token, or None where PVE has no SDN lock (PVE 8); SdnRefused when PVE refuses it."""
    try:
        return client.post(LOCK, context='locking the SDN config', **({'allow-pending': 1} if allow_pending else {}))
    except PveApiError as exc:
        if exc.status == 501:
            return None
        if 'pending changes' in str(exc.reason):
            raise SdnRefused(
                'someone changed the SDN config after this run read it: PVE refuses the lock, as changes are now pending '
                f'({exc.reason.strip()}). Nothing was changed; run again to see them'
            ) from None
        if 'invalid lock token' in str(exc.reason):
            raise SdnRefused(
                f'another client holds the lock of the SDN config ({exc.reason.strip()}). Nothing was changed; run again when it is done, '
                'or, if it is gone, release its lock (pvesh delete /cluster/sdn/lock --force 1)'
            ) from None
        raise


def release(client, token):
    """Release the lock taken with token (no-op for None)."""
    if token is not None:
        client.delete(LOCK, idempotent=True, context='releasing the lock of the SDN config', **{'lock-token': token})


def release_quietly(client, token):
    """Release the lock on the way out of a failure that is reported instead (a failed release would hide it)."""
    with contextlib.suppress(PveApiError):
        release(client, token)


def rollback(client, token):
    """Write the running SDN config back over the config files and release the lock."""
    client.post('/cluster/sdn/rollback', idempotent=True, context="rolling back this run's SDN writes", **{'lock-token': token})
