# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""The one error type of the API client, how PVE's failures are classified, and secret redaction."""

from __future__ import annotations

import re
from urllib.parse import quote

MASK = '********'

# Request parameters whose values are secrets wherever they show up.
SECRET_PARAMS = frozenset(
    (
        'password',
        'cipassword',
        'new-password',
        'confirmation-password',
        'ticket',
        'vncticket',
        'CSRFPreventionToken',
        'api_password',
        'api_token_secret',
        'token_value',
    )
)

_SECRET_PATTERNS = (
    # The token header: keep the token id, hide the secret (PVE accepts '=' or ' ' as separator).
    re.compile(r'(PVEAPIToken[= ][^=\s]+[= ])[^\s"\',;]+'),
    re.compile(r'(PVEAuthCookie=)[^;\s"\']+'),
    # A PVE login ticket, wherever it appears: PVE:user@realm:HEXTIME::signature
    re.compile(r'(PVE(?:VNC)?:[^:\s]+:[0-9A-Fa-f]{8}::)[^\s"\',;]+'),
    # name=value, name: value, "name": "value" for every secret parameter.
    re.compile(r'''((?<![\w-])(?:%s)["']?\s*[=:]\s*["']?)[^\s&"',;}]+''' % '|'.join(re.escape(k) for k in SECRET_PARAMS)),
)

# pve-guest-common src/PVE/AbstractConfig.pm check_lock: "VM is locked (backup)", "CT is locked (disk)"; not the lock
# a hibernation leaves (qemu-server vm_suspend with todisk), which only the VM's next start or resume lifts.
_GUEST_LOCKED = re.compile(r'\b(?:VM|CT) is locked \((?!suspended\))')
_TRANSIENT = (
    (re.compile(r"can't lock file '[^']*' - got timeout"), 'a config lock timed out'),
    (re.compile(r"cfs-lock '[^']*' error: got lock request timeout"), 'a cluster lock timed out'),
    (_GUEST_LOCKED, 'the guest is locked'),
    (re.compile(r'got no worker upid'), 'PVE could not start the task'),
    (re.compile(r'cluster not ready - no quorum'), 'the cluster has no quorum'),
)
# PVE's status for "the proxy could not reach the node" (AnyEvent::HTTP's connection error).
NO_ROUTE_STATUS = 595
_MISSING = re.compile(r'does not exist|\bno such\b', re.IGNORECASE)
# A state answer ("VM 104 not running", "QEMU guest agent is not running"): asking again at once will not change it.
_NOT_RUNNING = re.compile(r'\bnot running\b', re.IGNORECASE)
_PERMISSION = re.compile(r'Permission check failed \((?P<path>/[^,)]*), (?P<privilege>[\w.]+)\)')
# A write with a digest refused because the config changed since it was read: PVE::Tools::assert_if_modified's text,
# and fakepve's (qemu-server's older update path). The writer reads again, merges, and writes again, a few times.
_CONCURRENT_CHANGE = re.compile(
    r'detected modified configuration - file changed by other user'
    r'|checksum mis+match \(file change by other user'
)
DIGEST_WRITE_ATTEMPTS = 5


class PveApiError(Exception):
    """A failed PVE API call or task. Its message says what was being done and why it failed; no secret is in it.

    reason is PVE's own message (or the connection error), status the HTTP status (None when no
    answer came), errors PVE's per-field messages; upid, exitstatus and log describe a failed task.
    """

    def __init__(self, message, *, reason=None, status=None, errors=None, upid=None, exitstatus=None, log=()):
        super().__init__(message)
        self.message = message
        self.reason = reason if reason is not None else message
        self.status = status
        self.errors = dict(errors or {})
        self.upid = upid
        self.exitstatus = exitstatus
        self.log = list(log)

    def __str__(self):
        return self.message

    def details(self):
        """The error's facts as module result keys (only those that are set)."""
        facts = {
            'http_status': self.status,
            'api_errors': self.errors or None,
            'task_upid': self.upid,
            'task_exitstatus': self.exitstatus,
            'task_log': self.log or None,
        }
        return {key: value for key, value in facts.items() if value is not None}


class Redactor:
    """Replaces secrets in text: the values it was given, and anything shaped like a PVE secret."""

    def __init__(self, *secrets):
        self._values = set()
        for secret in secrets:
            self.add(secret)

    def add(self, secret):
        if secret:
            secret = str(secret)
            self._values.update((secret, quote(secret, safe=''), quote(secret)))

    def __call__(self, text):
        if text is None:
            return None
        text = str(text)
        for value in sorted(self._values, key=len, reverse=True):
            text = text.replace(value, MASK)
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub(r'\g<1>' + MASK, text)
        return text

    def mapping(self, values):
        """A dict with every key and value redacted."""
        return {self(key): self(value) for key, value in (values or {}).items()}


def transient_reason(status, message):
    """Why a failure is worth retrying for any method (PVE refused before doing anything), else None."""
    if status == NO_ROUTE_STATUS:
        return 'PVE could not reach the node'
    for pattern, reason in _TRANSIENT:
        if pattern.search(message or ''):
            return reason
    return None


def is_guest_locked(message):
    """PVE refused because the guest's config carries a lock (a clone, backup, snapshot, ... in progress)."""
    return bool(_GUEST_LOCKED.search(message or ''))


def is_missing(message):
    """PVE said the object does not exist (a permanent answer, not worth a retry)."""
    return bool(_MISSING.search(message or ''))


def is_concurrent_change(message):
    """PVE refused a write made with a digest: someone changed the config since it was read."""
    return bool(_CONCURRENT_CHANGE.search(message or ''))


def is_permanent(message):
    """PVE's 500 answers a read with a fact (missing, not running) rather than a hiccup: not worth a retry."""
    return is_missing(message) or bool(_NOT_RUNNING.search(message or ''))


def vmid_taken(message, vmid):
    """PVE refused a create or clone because VMID vmid is in use (by a guest, its config or a volume)."""
    message = message or ''
    names_vmid = re.search(r'(?<!\d)%d(?!\d)' % vmid, message) is not None
    return 'already exists' in message and (names_vmid or 'config file already exists' in message)


def permission_hint(reason, credential):
    """How to grant what a 403 asked for, naming the credential (never its secret)."""
    match = _PERMISSION.search(reason or '')
    if not match:
        return '%s lacks a privilege this call needs' % credential.description
    return grant_hint(match.group('privilege'), match.group('path'), credential)


def grant_hint(privileges, path, credential):
    """How to grant privileges (one, or several joined by ', ') on path to the credential, as a pveum command."""
    if credential.token_id:
        return (
            "grant %s on %s to API token %s (a token with privilege separation needs its own ACL entry: "
            "pveum acl modify %s --tokens '%s' --roles <a role with %s>)" % (privileges, path, credential.token_id, path, credential.token_id, privileges)
        )
    return "grant %s on %s to user %s (pveum acl modify %s --users '%s' --roles <a role with %s>)" % (
        privileges,
        path,
        credential.user,
        path,
        credential.user,
        privileges,
    )


def describe_failure(context, reason, status=None, errors=None, hint=None):
    """'<what was being done> failed (HTTP n): <PVE's message> <field: message; ...>. <hint>'"""
    text = '%s failed' % context
    if status is not None:
        text += ' (HTTP %d)' % status
    text += ': %s' % (reason or 'no reason given').strip()
    if errors:
        text += ' ' + '; '.join('%s: %s' % (field, str(msg).strip()) for field, msg in sorted(errors.items()))
    if hint:
        text += '. Hint: ' + hint
    return text
