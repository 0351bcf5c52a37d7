# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""Error classification and secret redaction, as pure functions over PVE's real wording."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._api import Credential
from ansible_collections.puls.proxmox.plugins.module_utils._errors import (
    MASK,
    PveApiError,
    Redactor,
    describe_failure,
    is_concurrent_change,
    is_missing,
    is_permanent,
    permission_hint,
    transient_reason,
    vmid_taken,
)

TICKET = 'PVE:root@pam:6B0CCF68::aGVsbG8gd29ybGQgdGhpcyBpcyBhIHNpZ25hdHVyZQ=='
CSRF = '6B0CCF68:Zm9vYmFyYmF6cXV1eA'


@pytest.mark.parametrize(
    'text, secret',
    [
        ('Authorization: PVEAPIToken=root@pam!puls=0b8f-4c1e-9d2a', '0b8f-4c1e-9d2a'),
        ('PVEAPIToken root@pam!puls 0b8f-4c1e-9d2a', '0b8f-4c1e-9d2a'),
        ('Cookie: PVEAuthCookie=%s; other=1' % TICKET, TICKET),
        ('ticket %s in a log line' % TICKET, TICKET.split('::')[1]),
        ('username=root%40pam&password=hunter2&realm=pam', 'hunter2'),
        ('cipassword=s3cr3t-ci&ciuser=ubuntu', 's3cr3t-ci'),
        ('{"new-password": "n3w-Pass", "userid": "a@pve"}', 'n3w-Pass'),
        ('CSRFPreventionToken: %s' % CSRF, CSRF),
        ("'ticket': 'PVEVNC:6B0CCF68::c2lnbmF0dXJl'", 'c2lnbmF0dXJl'),
    ],
)
def test_every_kind_of_secret_is_masked_by_its_shape(text, secret):
    redacted = Redactor()(text)
    assert secret not in redacted and MASK in redacted


def test_known_secret_values_are_masked_wherever_they_appear_also_url_encoded():
    redact = Redactor('p@ss word/1', None, '')
    assert redact('login of root@pam with p@ss word/1 and p%40ss%20word%2F1 failed') == 'login of root@pam with %s and %s failed' % (MASK, MASK)
    assert redact(None) is None


def test_redaction_keeps_the_readable_parts():
    redact = Redactor()
    assert redact('PVEAPIToken=root@pam!puls=abc') == 'PVEAPIToken=root@pam!puls=' + MASK
    assert redact("Permission check failed (/vms/100, VM.Config.CPU)") == "Permission check failed (/vms/100, VM.Config.CPU)"
    assert redact('UPID:pve1:000003E8:00001B58:6B0CCF68:qmcreate:104:root@pam!puls:') == 'UPID:pve1:000003E8:00001B58:6B0CCF68:qmcreate:104:root@pam!puls:'
    assert redact.mapping({'cipassword': 'cipassword=x1', 'cores': 'bad'}) == {'cipassword': 'cipassword=' + MASK, 'cores': 'bad'}


@pytest.mark.parametrize(
    'status, message, transient',
    [
        (500, "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout", True),
        (500, "cfs-lock 'storage-local-lvm' error: got lock request timeout", True),
        (500, 'VM is locked (clone)', True),
        (500, 'CT is locked (backup)', True),
        # A hibernated VM's lock stays until it resumes (qemu-server vm_suspend with todisk): asking again changes nothing.
        (500, 'VM is locked (suspended)', False),
        (500, 'VM is locked (suspending)', True),
        (500, 'got no worker upid - start worker failed', True),
        (500, 'cluster not ready - no quorum?', True),
        (595, 'No route to host', True),
        (500, 'VM 104 already running', False),
        (500, "unable to create VM 104 - VM 104 already exists on node 'pve1'", False),
        (400, 'Parameter verification failed.', False),
        (None, None, False),
    ],
)
def test_transient_failures_are_those_where_pve_did_nothing(status, message, transient):
    assert (transient_reason(status, message) is not None) is transient


@pytest.mark.parametrize(
    'message, vmid, taken',
    [
        ("unable to create VM 104 - VM 104 already exists on node 'pve2'", 104, True),
        ('unable to create VM 104: config file already exists', 104, True),
        ('VM 104 already exists', 104, True),
        ("volume 'local-lvm:vm-104-disk-0' already exists", 104, True),
        ("unable to create VM 1040 - VM 1040 already exists on node 'pve2'", 104, False),
        ("storage 'nfs' already exists", 104, False),
        ('VM 104 already running', 104, False),
    ],
)
def test_vmid_taken_recognises_pves_wordings(message, vmid, taken):
    assert vmid_taken(message, vmid) is taken


def test_missing_objects_and_stopped_guests_are_permanent_answers():
    assert is_missing("Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")
    assert is_missing("no such VM ('104')")
    assert not is_missing('VM is locked (clone)')
    assert is_permanent('QEMU guest agent is not running') and is_permanent('VM 104 not running')
    assert is_permanent("Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist")
    assert not is_permanent('internal error')


def test_a_write_refused_for_a_stale_digest_is_told_apart_from_other_refusals():
    assert is_concurrent_change('detected modified configuration - file changed by other user')
    assert is_concurrent_change('update VM 104: checksum missmatch (file change by other user?)')
    assert not is_concurrent_change("can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout")
    assert not is_concurrent_change(None)


def test_permission_hint_for_a_user_and_for_unparsed_text():
    user = Credential('alice@pve', password='pw')
    assert permission_hint('Permission check failed (/vms/100, VM.PowerMgmt)', user) == (
        "grant VM.PowerMgmt on /vms/100 to user alice@pve (pveum acl modify /vms/100 --users 'alice@pve' --roles <a role with VM.PowerMgmt>)"
    )
    assert permission_hint('Permission check failed (user != root@pam)', user) == 'user alice@pve lacks a privilege this call needs'


def test_failure_description_reads_as_one_sentence():
    assert describe_failure('starting VM 104 on pve1', 'VM 104 already running\n', 500) == 'starting VM 104 on pve1 failed (HTTP 500): VM 104 already running'
    assert describe_failure('reading', None, hint='check it') == 'reading failed: no reason given. Hint: check it'


def test_error_details_hold_only_what_is_known():
    assert PveApiError('x').details() == {}
    error = PveApiError('x', upid='UPID:a', exitstatus='boom', log=['boom'])
    assert error.details() == {'task_upid': 'UPID:a', 'task_exitstatus': 'boom', 'task_log': ['boom']}
    assert error.reason == 'x'
