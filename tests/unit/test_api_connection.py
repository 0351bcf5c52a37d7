# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""Connection settings as users write them: URL forms, credentials, TLS choice (no network)."""

from __future__ import annotations

import pytest

from ansible_collections.puls.proxmox.plugins.module_utils._api import PveClient, parse_api_url, resolve_credential, tls_verify
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError


@pytest.mark.parametrize(
    'api_url, expected',
    [
        ('pve.example.com', 'https://pve.example.com:8006/api2/json'),
        ('pve.example.com:8006', 'https://pve.example.com:8006/api2/json'),
        ('https://pve.example.com', 'https://pve.example.com:8006/api2/json'),
        ('https://pve.example.com:8006/api2/json', 'https://pve.example.com:8006/api2/json'),
        ('https://pve.example.com:8006/api2/json/', 'https://pve.example.com:8006/api2/json'),
        ('https://pve.example.com/', 'https://pve.example.com:8006/api2/json'),
        ('  HTTPS://PVE.example.com:8443  ', 'https://pve.example.com:8443/api2/json'),
        ('https://proxy.example.com:443/pve/', 'https://proxy.example.com:443/pve/api2/json'),
        ('[2001:db8::10]:8006', 'https://[2001:db8::10]:8006/api2/json'),
        ('127.0.0.5', 'https://127.0.0.5:8006/api2/json'),
    ],
)
def test_api_url_forms_users_write_all_reach_the_api(api_url, expected):
    assert parse_api_url(api_url).url == expected


@pytest.mark.parametrize(
    'api_url, complaint',
    [
        (None, 'PROXMOX_URL'),
        ('', 'PROXMOX_URL'),
        ('http://pve.example.com', 'only served over https'),
        ('https://pve.example.com:notaport', 'invalid port'),
    ],
)
def test_unusable_api_url_is_explained(api_url, complaint):
    with pytest.raises(PveApiError, match=complaint):
        parse_api_url(api_url)


def test_credentials_in_the_url_are_refused_without_echoing_them():
    with pytest.raises(PveApiError) as caught:
        parse_api_url('https://root:hunter2@pve.example.com')
    assert 'hunter2' not in str(caught.value)


def test_token_secret_selects_token_auth_even_with_a_password():
    credential = resolve_credential('root@pam', 'puls', 'tok', 'pw')
    assert (credential.token_id, credential.password) == ('root@pam!puls', None)
    assert credential.description == 'API token root@pam!puls'


def test_full_token_id_in_token_name_supplies_the_user():
    credential = resolve_credential(None, 'automation@pve!ci', 'tok')
    assert (credential.user, credential.token_name) == ('automation@pve', 'ci')


def test_token_id_naming_another_user_than_api_user_is_refused():
    with pytest.raises(PveApiError, match='names user automation@pve, but api_user is root@pam'):
        resolve_credential('root@pam', 'automation@pve!ci', 'tok')


def test_password_without_token_selects_ticket_auth():
    credential = resolve_credential('root@pam', None, None, 'pw')
    assert credential.token_id is None and credential.description == 'user root@pam'


def test_missing_secret_and_password_names_every_option_and_variable():
    with pytest.raises(PveApiError) as caught:
        resolve_credential('root@pam', 'puls', None, None)
    for name in (
        'api_token_secret',
        'PROXMOX_TOKEN_SECRET',
        'api_password',
        'PROXMOX_PASSWORD',
        'api_user',
        'PROXMOX_USER',
        'api_token_name',
        'PROXMOX_TOKEN_NAME',
    ):
        assert name in str(caught.value)


@pytest.mark.parametrize('user', [None, 'root'])
def test_user_without_realm_is_refused(user):
    with pytest.raises(PveApiError, match='with its realm, for example root@pam'):
        resolve_credential(user, None, None, 'pw')


def test_token_secret_without_token_name_is_refused():
    with pytest.raises(PveApiError, match='api_token_name'):
        resolve_credential('root@pam', None, 'tok')


def test_tls_choice(tmp_path):
    cafile = tmp_path / 'ca.pem'
    cafile.write_text('x')
    assert tls_verify(False, str(cafile)) is False
    assert tls_verify(True, str(cafile)) == str(cafile)
    assert tls_verify(True, None) is True
    with pytest.raises(PveApiError, match='does not exist'):
        tls_verify(True, str(tmp_path / 'missing.pem'))


def test_unverified_tls_is_warned_about_once_by_the_client():
    client = PveClient('pve.example.com', 'root@pam', 'puls', 'tok', validate_certs=False)
    assert len(client.warnings) == 1 and 'validate_certs is false' in client.warnings[0]
    assert PveClient('pve.example.com', 'root@pam', 'puls', 'tok').warnings == []


def test_client_repr_names_the_token_not_its_secret():
    client = PveClient('pve.example.com', 'root@pam', 'puls', 'tok-Secret1')
    assert 'tok-Secret1' not in repr(client) and 'tok-Secret1' not in repr(client.credential)
    assert repr(client) == 'PveClient(https://pve.example.com:8006/api2/json, API token root@pam!puls)'
