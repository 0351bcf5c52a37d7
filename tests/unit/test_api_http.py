# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""The client over real HTTPS against a scripted stand-in on 127.0.0.1: auth, TLS, retries, errors, secrets.

Run inside a network namespace: unshare -rn sh -c 'ip link set lo up && .venv/bin/pytest tests/unit'.
"""

from __future__ import annotations

import warnings

import pytest
import requests
from pve_stub import PveStub, Reply

from ansible_collections.puls.proxmox.plugins.module_utils import _api
from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient, RetryPolicy
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError

FAST = RetryPolicy(attempts=4, budget=5.0, base_delay=0.01, max_delay=0.02)
UPID = 'UPID:pve1:000003E8:00001B58:6B0CCF68:qmcreate:104:root@pam!puls:'


@pytest.fixture
def stub(tmp_path):
    server = PveStub(tmp_path)
    yield server
    server.close()


def token_client(stub, **options):
    options.setdefault('ca_path', stub.cafile)
    return PveClient(stub.url, 'root@pam', 'puls', stub.token_secret, retry=FAST, **options)


def password_client(stub, **options):
    return PveClient(stub.url, 'root@pam', api_password=stub.password, ca_path=stub.cafile, retry=FAST, **options)


# ---------------------------------------------------------------- authentication


def test_token_auth_sends_the_pve_api_token_header(stub):
    stub.route('GET', '/version', Reply(data={'version': '9.0'}))
    assert token_client(stub).get('/version') == {'version': '9.0'}
    assert stub.seen[0].headers['Authorization'] == 'PVEAPIToken=root@pam!puls=%s' % stub.token_secret
    assert 'CSRFPreventionToken' not in stub.seen[0].headers


def test_get_answer_returns_the_result_attributes_beside_data(stub):
    # pve-http-server Formatter/Standard.pm prepare_response_data sends `changes` beside `data` (the network index).
    stub.route('GET', '/nodes/pve1/network', Reply(raw='{"data": [{"iface": "vmbr1"}], "changes": "+auto vmbr1\\n"}'))
    client = token_client(stub)
    assert client.get_answer('/nodes/pve1/network') == {'data': [{'iface': 'vmbr1'}], 'changes': '+auto vmbr1\n'}
    assert client.get('/nodes/pve1/network') == [{'iface': 'vmbr1'}]


def test_password_auth_logs_in_once_and_sends_ticket_and_csrf_on_writes(stub):
    stub.route('GET', '/version', Reply(data={'version': '9.0'}))
    stub.route('PUT', '/nodes/pve1/qemu/104/config', Reply())
    client = password_client(stub)
    client.get('/version')
    client.put('/nodes/pve1/qemu/104/config', cores=2)
    login, read, write = stub.seen
    assert (login.method, login.path, login.form) == ('POST', '/access/ticket', {'username': 'root@pam', 'password': stub.password})
    ticket = next(iter(stub.tickets))
    assert 'PVEAuthCookie=%s' % ticket in read.headers['Cookie'] and 'CSRFPreventionToken' not in read.headers
    assert write.headers['CSRFPreventionToken'] == stub.tickets[ticket] and write.form == {'cores': '2'}
    assert stub.logins == 1


def test_expired_ticket_is_renewed_by_one_login_and_the_request_repeated(stub):
    stub.route('POST', '/nodes/pve1/qemu/104/status/start', Reply(data=UPID))
    stub.route('GET', '/version', Reply(data={}))
    client = password_client(stub)
    client.get('/version')
    stub.revoke_tickets()
    assert client.post('/nodes/pve1/qemu/104/status/start') == UPID
    assert stub.logins == 2
    assert [(s.method, s.path) for s in stub.seen][-3:] == [
        ('POST', '/nodes/pve1/qemu/104/status/start'),
        ('POST', '/access/ticket'),
        ('POST', '/nodes/pve1/qemu/104/status/start'),
    ]


def test_ticket_refused_again_after_renewal_fails_instead_of_looping(stub):
    stub.route('GET', '/version', Reply(data={}))
    client = password_client(stub)
    client.get('/version')
    stub.route('GET', '/nodes', Reply(401, message='permission denied - invalid PVE ticket'))
    with pytest.raises(PveApiError, match='PVE rejected user root@pam') as caught:
        client.get('/nodes')
    assert caught.value.status == 401 and stub.logins == 2


def test_wrong_password_fails_at_login_naming_user_and_variables(stub):
    client = PveClient(stub.url, 'root@pam', api_password='wrong-Secret9', ca_path=stub.cafile, retry=FAST)
    with pytest.raises(PveApiError) as caught:
        client.get('/version')
    message = str(caught.value)
    assert 'root@pam' in message and 'PROXMOX_PASSWORD' in message and 'wrong-Secret9' not in message
    assert len(stub.requests('POST', '/access/ticket')) == 1


def test_rejected_token_names_the_token_id_never_the_secret(stub):
    client = PveClient(stub.url, 'root@pam', 'puls', 'bad-Secret7', ca_path=stub.cafile, retry=FAST)
    with pytest.raises(PveApiError) as caught:
        client.get('/version', context='reading the PVE version')
    message = str(caught.value)
    assert message.startswith('reading the PVE version failed (HTTP 401)')
    assert 'API token root@pam!puls' in message and 'PROXMOX_TOKEN_SECRET' in message
    assert 'bad-Secret7' not in message and len(stub.seen) == 1


def test_permission_error_names_privilege_path_and_how_to_grant_it(stub):
    stub.route('PUT', '/nodes/pve1/qemu/100/config', Reply(403, message='Permission check failed (/vms/100, VM.Config.CPU)'))
    with pytest.raises(PveApiError) as caught:
        token_client(stub).put('/nodes/pve1/qemu/100/config', cores=4, context='updating config of VM 100 on pve1')
    message = str(caught.value)
    assert 'updating config of VM 100 on pve1 failed (HTTP 403): Permission check failed (/vms/100, VM.Config.CPU)' in message
    assert "grant VM.Config.CPU on /vms/100 to API token root@pam!puls" in message
    assert "pveum acl modify /vms/100 --tokens 'root@pam!puls'" in message


def test_parameter_errors_are_listed_per_field(stub):
    errors = {'cores': "type check ('integer') failed - got 'x'", 'memory': 'value must be at least 16'}
    stub.route('POST', '/nodes/pve1/qemu', Reply(400, message='Parameter verification failed.', errors=errors))
    with pytest.raises(PveApiError) as caught:
        token_client(stub).post('/nodes/pve1/qemu', vmid=104, cores='x', memory=1, context='creating VM 104 on pve1')
    assert str(caught.value) == (
        "creating VM 104 on pve1 failed (HTTP 400): Parameter verification failed. "
        "cores: type check ('integer') failed - got 'x'; memory: value must be at least 16"
    )
    assert caught.value.errors == {'cores': "type check ('integer') failed - got 'x'", 'memory': 'value must be at least 16'}
    assert caught.value.details() == {'http_status': 400, 'api_errors': caught.value.errors}


# ---------------------------------------------------------------- TLS


@pytest.fixture
def hostile_ca_env(monkeypatch):
    """What these machines (and many corporate ones) set: a CA bundle that does not know the API's CA."""
    bundle = requests.certs.where()
    for name in ('REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'SSL_CERT_FILE'):
        monkeypatch.setenv(name, bundle)


def test_the_environment_bundle_would_override_a_session_verify_setting(stub, hostile_ca_env):
    """Why verify goes with every request: requests lets REQUESTS_CA_BUNDLE beat Session.verify."""
    session = requests.Session()
    session.verify = False
    with pytest.raises(requests.exceptions.SSLError):
        session.get(stub.url + '/api2/json/version', timeout=5)


def test_validate_certs_false_wins_over_the_environment_bundle(stub, hostile_ca_env, recwarn):
    stub.route('GET', '/version', Reply(data={'version': '9.0'}))
    client = token_client(stub, ca_path=None, validate_certs=False)
    for _request in range(3):
        assert client.get('/version') == {'version': '9.0'}
    assert not [w for w in recwarn if 'Unverified HTTPS' in str(w.message)]


def test_ca_path_wins_over_the_environment_bundle(stub, hostile_ca_env):
    stub.route('GET', '/version', Reply(data={'version': '9.0'}))
    assert token_client(stub, ca_path=stub.cafile).get('/version') == {'version': '9.0'}


def test_password_login_also_honours_the_tls_choice(stub, hostile_ca_env):
    stub.route('GET', '/version', Reply(data={}))
    PveClient(stub.url, 'root@pam', api_password=stub.password, validate_certs=False, retry=FAST).get('/version')
    assert stub.logins == 1


def test_unknown_certificate_fails_at_once_with_a_tls_hint(stub, hostile_ca_env):
    with pytest.raises(PveApiError) as caught:
        token_client(stub, ca_path=None).get('/version')
    assert 'TLS handshake failed' in str(caught.value) and 'ca_path (PROXMOX_CA_PATH)' in str(caught.value)
    assert stub.seen == []


# ---------------------------------------------------------------- retries

LOCK = "can't lock file '/var/lock/qemu-server/lock-104.conf' - got timeout"
CFS = "cfs-lock 'storage-local-lvm' error: got lock request timeout"
OK_UPID = Reply(data=UPID)


@pytest.mark.parametrize(
    'method, idempotent, first, retried',
    [
        ('GET', False, Reply(500, message='internal error'), True),
        ('GET', False, Reply(502, raw='<html>Bad Gateway</html>', message='Bad Gateway'), True),
        ('GET', False, Reply(drop=True), True),
        ('GET', False, Reply(500, message="Configuration file 'nodes/pve1/qemu-server/104.conf' does not exist"), False),
        ('GET', False, Reply(500, message='QEMU guest agent is not running'), False),
        ('GET', False, Reply(501, message="Method 'GET /nodes/pve1/foo' not implemented"), False),
        ('GET', False, Reply(400, message='Parameter verification failed.', errors={'type': 'value not allowed'}), False),
        ('POST', False, Reply(500, message=LOCK), True),
        ('PUT', False, Reply(500, message=CFS), True),
        ('POST', False, Reply(500, message='VM is locked (clone)'), True),
        ('POST', False, Reply(500, message='got no worker upid - start worker failed'), True),
        ('DELETE', False, Reply(500, message='cluster not ready - no quorum?'), True),
        ('POST', False, Reply(595, message='No route to host'), True),
        ('POST', False, Reply(500, message='VM 104 already running'), False),
        ('POST', False, Reply(drop=True), False),
        ('POST', False, Reply(502, raw='<html>Bad Gateway</html>', message='Bad Gateway'), False),
        ('PUT', True, Reply(drop=True), True),
        ('DELETE', True, Reply(drop=True), True),
        ('PUT', True, Reply(500, message='internal error'), False),
    ],
)
def test_retry_classification(stub, method, idempotent, first, retried):
    path = '/nodes/pve1/qemu/104/thing'
    stub.route(method, path, first, Reply(data='done'))
    client = token_client(stub)
    if retried:
        assert client.request(method, path, idempotent=idempotent) == 'done'
        assert len(stub.requests(method, path)) == 2
    else:
        with pytest.raises(PveApiError):
            client.request(method, path, idempotent=idempotent)
        assert len(stub.requests(method, path)) == 1


def test_lost_answer_to_a_plain_write_says_it_may_have_been_applied(stub):
    stub.route('POST', '/nodes/pve1/qemu/104/status/start', Reply(drop=True))
    with pytest.raises(PveApiError, match='may or may not have been applied') as caught:
        token_client(stub).post('/nodes/pve1/qemu/104/status/start', context='starting VM 104 on pve1')
    assert str(caught.value).startswith('starting VM 104 on pve1 failed: no answer from PVE')


def test_retries_are_bounded_and_say_so(stub):
    stub.route('POST', '/nodes/pve1/qemu/104/config', Reply(500, message=LOCK))
    with pytest.raises(PveApiError, match=r'gave up after 4 attempts in \d+ s') as caught:
        token_client(stub).post('/nodes/pve1/qemu/104/config', context='updating config of VM 104 on pve1')
    assert LOCK in str(caught.value) and len(stub.seen) == FAST.attempts


def test_retry_time_budget_bounds_the_attempts():
    policy = RetryPolicy(attempts=100, budget=1.0, base_delay=0.4, max_delay=0.8)
    waited, attempt = 0.0, 1
    # As if each delay had been slept: the call began `waited` seconds ago.
    while (delay := policy.next_delay(attempt, _api.time.monotonic() - waited)) is not None:
        waited += delay
        attempt += 1
    assert waited <= 1.0 and attempt < 10


def test_backoff_grows_with_jitter():
    policy = RetryPolicy(attempts=10, budget=1e9, base_delay=1.0, max_delay=8.0)
    now = _api.time.monotonic()
    for attempt, ceiling in ((1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)):
        samples = {policy.next_delay(attempt, now) for _sample in range(20)}
        assert all(ceiling / 2 <= s <= ceiling for s in samples) and len(samples) > 1


def test_connection_refused_is_retried_for_any_method(stub):
    """A connection that could not be made never reached PVE, so even a create may be sent again."""
    stub.close()
    client = token_client(stub)
    with pytest.raises(PveApiError, match=r'no answer from PVE .*gave up after 4 attempts'):
        client.post('/nodes/pve1/qemu', vmid=104)


# ---------------------------------------------------------------- creating guests


@pytest.fixture
def no_settle(monkeypatch):
    monkeypatch.setattr(_api, 'CREATE_SETTLE_SECONDS', 0)


def test_create_whose_answer_was_lost_is_resent_only_when_the_vm_is_absent(stub, no_settle):
    stub.route('POST', '/nodes/pve1/qemu', Reply(drop=True), OK_UPID)
    stub.route('GET', '/cluster/resources', Reply(data=[{'vmid': 100, 'node': 'pve1', 'name': 'other', 'type': 'qemu'}]))
    assert token_client(stub).create_vm('/nodes/pve1/qemu', 104, name='web1', cores=2) == UPID
    creates = stub.requests('POST', '/nodes/pve1/qemu')
    assert len(creates) == 2 and creates[1].form == {'vmid': '104', 'name': 'web1', 'cores': '2'}


def test_create_whose_answer_was_lost_but_which_happened_is_not_resent(stub, no_settle):
    stub.route('POST', '/nodes/pve1/qemu/9000/clone', Reply(drop=True))
    stub.route('GET', '/cluster/resources', Reply(data=[{'vmid': 104, 'node': 'pve1', 'name': '', 'type': 'qemu'}]))
    stub.route('GET', '/nodes/pve1/qemu/104/config', Reply(data={'name': 'web1', 'lock': 'clone'}), Reply(data={'name': 'web1'}))
    assert token_client(stub).create_vm('/nodes/pve1/qemu/9000/clone', 104, name='web1', full=True) is None
    clones = stub.requests('POST', '/nodes/pve1/qemu/9000/clone')
    assert len(clones) == 1 and clones[0].form == {'newid': '104', 'name': 'web1', 'full': '1'}
    assert len(stub.requests('GET', '/nodes/pve1/qemu/104/config')) == 2


def test_create_whose_answer_was_lost_and_whose_vmid_another_vm_took_fails_as_taken(stub, no_settle):
    stub.route('POST', '/nodes/pve1/qemu', Reply(drop=True))
    stub.route('GET', '/cluster/resources', Reply(data=[{'vmid': 104, 'node': 'pve2', 'name': 'db1', 'type': 'qemu'}]))
    stub.route('GET', '/nodes/pve2/qemu/104/config', Reply(data={'name': 'db1'}))
    with pytest.raises(PveApiError, match="VM 104 already exists on node pve2 and is named 'db1', not 'web1'"):
        token_client(stub).create_vm('/nodes/pve1/qemu', 104, name='web1')
    assert len(stub.requests('POST', '/nodes/pve1/qemu')) == 1


def test_resent_create_refused_as_existing_is_recognised_as_our_own(stub, no_settle):
    """The first try did create the VM, just after we looked: PVE's 'already exists' is then our VM."""
    stub.route('POST', '/nodes/pve1/qemu', Reply(drop=True), Reply(500, message="unable to create VM 104 - VM 104 already exists on node 'pve1'"))
    stub.route('GET', '/cluster/resources', Reply(data=[]), Reply(data=[{'vmid': 104, 'node': 'pve1', 'name': 'web1'}]))
    stub.route('GET', '/nodes/pve1/qemu/104/config', Reply(data={'name': 'web1'}))
    assert token_client(stub).create_vm('/nodes/pve1/qemu', 104, name='web1') is None
    assert len(stub.requests('POST', '/nodes/pve1/qemu')) == 2


# ---------------------------------------------------------------- secrets and the request hook


def test_no_secret_reaches_messages_details_or_reprs(stub):
    """PVE (or a proxy) echoing what it got must not carry a secret into the user's output."""
    client = password_client(stub)
    stub.route('GET', '/version', Reply(data={}))
    client.get('/version')
    ticket, csrf = next(iter(stub.tickets.items()))
    echoed = 'got ticket %s csrf %s password %s cipassword=hunter2-Ci' % (ticket, csrf, stub.password)
    stub.route('PUT', '/nodes/pve1/qemu/104/config', Reply(400, message=echoed, errors={'cipassword': "value 'hunter2-Ci' rejected"}))
    with pytest.raises(PveApiError) as caught:
        client.put('/nodes/pve1/qemu/104/config', cipassword='hunter2-Ci')
    error = caught.value
    shown = ' '.join((str(error), repr(error), repr(error.args), repr(error.details()), repr(client), error.reason))
    for secret in (ticket, ticket.split('::')[1], csrf, stub.password, 'hunter2-Ci'):
        assert secret not in shown
    assert error.__cause__ is None and error.__suppress_context__


def test_token_secret_echoed_by_a_proxy_is_redacted(stub):
    stub.route('GET', '/version', Reply(502, raw='bad', message='upstream refused PVEAPIToken=root@pam!puls=%s' % stub.token_secret))
    with pytest.raises(PveApiError) as caught:
        token_client(stub).get('/version')
    assert stub.token_secret not in str(caught.value) and 'PVEAPIToken=root@pam!puls=********' in str(caught.value)


def test_request_hook_sees_every_exchange_including_login_and_failures(stub):
    stub.route('GET', '/version', Reply(500, message='internal error'), Reply(data={}))
    seen = []
    client = PveClient(
        stub.url,
        'root@pam',
        api_password=stub.password,
        ca_path=stub.cafile,
        retry=FAST,
        on_request=lambda method, path, status: seen.append((method, path, status)),
    )
    client.get('/version')
    assert seen == [('POST', '/access/ticket', 200), ('GET', '/version', 500), ('GET', '/version', 200)]
    assert client.request_count == 3 == len(stub.seen)


def test_booleans_and_none_are_sent_as_pve_expects(stub):
    stub.route('POST', '/nodes/pve1/qemu/104/status/stop', Reply(data=UPID))
    token_client(stub).post('/nodes/pve1/qemu/104/status/stop', forceStop=True, skiplock=False, timeout=None)
    assert stub.seen[0].form == {'forceStop': '1', 'skiplock': '0'}


def test_params_named_like_client_arguments_reach_pve(stub):
    stub.route('GET', '/access/permissions', Reply(data={}))
    token_client(stub).get('/access/permissions', path='/vms/100')
    assert stub.seen[0].query == {'path': '/vms/100'}


def test_cluster_vms_and_vm_config_are_one_request_each(stub):
    stub.route('GET', '/cluster/resources', Reply(data=[{'vmid': 100}]))
    stub.route('GET', '/nodes/pve1/qemu/100/config', Reply(data={'cores': 2}))
    client = token_client(stub)
    assert client.cluster_vms() == [{'vmid': 100}]
    assert client.vm_config('pve1', 100, current=True) == {'cores': 2}
    assert client.vm_config('pve1', 100) == {'cores': 2}
    assert [(s.path, s.query) for s in stub.seen] == [
        ('/cluster/resources', {'type': 'vm'}),
        ('/nodes/pve1/qemu/100/config', {'current': '1'}),
        ('/nodes/pve1/qemu/100/config', {}),
    ]


def test_urllib3_insecure_warning_is_not_emitted_per_request(stub):
    stub.route('GET', '/version', Reply(data={}))
    client = token_client(stub, ca_path=None, validate_certs=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for _request in range(3):
            client.get('/version')
    assert [str(w.message) for w in caught] == []


def test_an_upload_body_is_what_requests_makes_of_the_parts_read_in_chunks_telling_the_file_bytes_sent():
    data = bytes(range(256)) * 1000
    parts = _api.upload_parts('big.iso', data, 'iso', ('sha256', 'ab' * 32))
    # What requests sent for files= before the body was streamed, with its boundary.
    made = requests.Request('POST', 'https://pve.invalid:8006/', files=parts).prepare()
    told = []
    body = _api.UploadBody(parts, lambda sent, total: told.append((sent, total)), boundary=made.headers['Content-Type'].split('boundary=')[1])
    assert (body.content_type, len(body)) == (made.headers['Content-Type'], len(made.body))
    chunks = [body.read(70000), body.read(100), body.read(-1), body.read(10)]
    assert b''.join(chunks) == made.body and chunks[-1] == b''
    assert [sent for sent, _total in told] == sorted(sent for sent, _total in told) and told[-1] == (len(data), len(data))
    assert {total for _sent, total in told} == {len(data)}
