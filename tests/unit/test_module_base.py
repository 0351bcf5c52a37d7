# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""PveModule: connection options from arguments or the environment, failures and results as Ansible shows them."""

from __future__ import annotations

import contextlib
import json

import pytest
import yaml
from ansible.module_utils import basic
from ansible.module_utils.common import warnings

try:  # ansible-core 2.19 and later
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # before: the arguments as ansible-core's own unit tests set them (test/units/modules/utils.py)

    @contextlib.contextmanager
    def patch_module_args(args):
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': {'_ansible_remote_tmp': '/tmp', '_ansible_keep_remote_files': False, **args}}).encode()
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


from ansible_collections.puls.proxmox.plugins.doc_fragments.connection import ModuleDocFragment
from ansible_collections.puls.proxmox.plugins.module_utils import _module
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._module import CONNECTION_ARGSPEC, PveModule

TOKEN_ARGS = {'api_url': 'pve.example.com', 'api_user': 'root@pam', 'api_token_name': 'puls', 'api_token_secret': 'tok-Secret1'}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    # As in a real module process: once controller code is imported (pytest plugins do), 2.19 and later send warnings
    # to the display. 2.18 has the package but not the switch, 2.16 neither.
    with contextlib.suppress(ImportError):
        from ansible.module_utils import _internal

        if hasattr(_internal, 'is_controller'):
            monkeypatch.setattr(_internal, 'is_controller', False)
    # A dict since 2.19, a list before.
    monkeypatch.setattr(warnings, '_global_warnings', type(warnings._global_warnings)())
    for name in (
        'PROXMOX_URL',
        'PROXMOX_HOST',
        'PROXMOX_USER',
        'PROXMOX_TOKEN_NAME',
        'PROXMOX_TOKEN_ID',
        'PROXMOX_TOKEN_SECRET',
        'PROXMOX_PASSWORD',
        'PROXMOX_VERIFY_SSL',
        'PROXMOX_CA_PATH',
    ):
        monkeypatch.delenv(name, raising=False)


def outcome(capsys, args, body, argument_spec=None):
    """The JSON result a module prints when body(module) exits it."""
    with patch_module_args(args), pytest.raises(SystemExit):
        body(PveModule(argument_spec=argument_spec))
    return json.loads(capsys.readouterr().out)


def warning_messages(result):
    # ansible-core 2.19 and later return each warning as a WarningSummary event, older ones as its message.
    return [warning['event']['msg'] if isinstance(warning, dict) else warning for warning in result.get('warnings', [])]


def test_connection_comes_from_the_environment_with_community_proxmox_names(capsys, monkeypatch):
    monkeypatch.setenv('PROXMOX_HOST', 'pve.example.com:8443')
    monkeypatch.setenv('PROXMOX_USER', 'automation@pve')
    monkeypatch.setenv('PROXMOX_TOKEN_ID', 'ci')
    monkeypatch.setenv('PROXMOX_TOKEN_SECRET', 'tok-Secret1')
    monkeypatch.setenv('PROXMOX_VERIFY_SSL', 'false')

    def body(module):
        client = module.client
        module.exit(url=client.base_url, who=client.credential.description)

    result = outcome(capsys, {}, body)
    assert (result['url'], result['who']) == ('https://pve.example.com:8443/api2/json', 'API token automation@pve!ci')
    assert len(warning_messages(result)) == 1 and 'validate_certs is false' in warning_messages(result)[0]


def test_proxmox_url_and_token_name_win_over_the_older_names(capsys, monkeypatch):
    for name, value in (
        ('PROXMOX_URL', 'new.example.com'),
        ('PROXMOX_HOST', 'old.example.com'),
        ('PROXMOX_USER', 'root@pam'),
        ('PROXMOX_TOKEN_NAME', 'new'),
        ('PROXMOX_TOKEN_ID', 'old'),
        ('PROXMOX_TOKEN_SECRET', 'tok-Secret1'),
    ):
        monkeypatch.setenv(name, value)
    result = outcome(capsys, {}, lambda module: module.exit(who=repr(module.client)))
    assert result['who'] == 'PveClient(https://new.example.com:8006/api2/json, API token root@pam!new)'


def test_missing_credentials_fail_naming_options_and_variables(capsys):
    result = outcome(capsys, {'api_url': 'pve.example.com', 'api_user': 'root@pam'}, lambda module: module.client)
    assert result['failed'] and 'PROXMOX_TOKEN_SECRET' in result['msg'] and 'PROXMOX_PASSWORD' in result['msg']


def test_api_error_becomes_a_failure_with_its_facts_and_no_secret(capsys):
    def reconcile(client, params, check_mode):
        raise PveApiError('updating config of VM 104 on pve1 failed (HTTP 400): Parameter verification failed. cores: bad', status=400, errors={'cores': 'bad'})

    result = outcome(capsys, TOKEN_ARGS, lambda module: module.run(reconcile, module.client, module.params, check_mode=module.check_mode))
    assert result['failed'] and result['msg'].startswith('updating config of VM 104 on pve1 failed (HTTP 400)')
    assert (result['http_status'], result['api_errors']) == (400, {'cores': 'bad'})
    assert 'tok-Secret1' not in json.dumps(result)


def test_reconcile_result_is_the_module_result(capsys):
    def reconcile(client, params, check_mode):
        return {'changed': True, 'vmid': 104, 'check': check_mode, 'warnings': ['WARN: no efidisk configured']}

    result = outcome(
        capsys, dict(TOKEN_ARGS, _ansible_check_mode=True), lambda module: module.run(reconcile, module.client, module.params, check_mode=module.check_mode)
    )
    assert (result['changed'], result['vmid'], result['check']) == (True, 104, True)
    assert warning_messages(result) == ['WARN: no efidisk configured']


@pytest.mark.parametrize('diff_mode', [True, False])
def test_diff_is_returned_in_diff_mode_only(capsys, diff_mode):
    diff = {'before': {'cores': 1}, 'after': {'cores': 2}}
    result = outcome(capsys, dict(TOKEN_ARGS, _ansible_diff=diff_mode), lambda module: module.exit(changed=True, diff=diff))
    assert ('diff' in result) == diff_mode


def test_module_options_join_the_connection_options(capsys):
    spec = {'name': {'type': 'str', 'required': True}}
    result = outcome(capsys, dict(TOKEN_ARGS, name='web1'), lambda module: module.exit(name=module.params['name']), spec)
    assert result['name'] == 'web1'


def test_module_cannot_redefine_a_connection_option():
    with pytest.raises(ValueError, match='api_url'):
        PveModule(argument_spec={'api_url': {'type': 'str'}})


def test_missing_library_fails_with_ansibles_standard_message(capsys, monkeypatch):
    monkeypatch.setattr(_module, 'MISSING_LIBRARY', ('proxmoxer', 'Traceback: ModuleNotFoundError'))
    with patch_module_args(TOKEN_ARGS), pytest.raises(SystemExit):
        PveModule()
    result = json.loads(capsys.readouterr().out)
    assert result['failed'] and 'Failed to import the required Python library (proxmoxer)' in result['msg']


def test_documented_connection_options_match_the_argument_spec():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options']
    assert documented.keys() == CONNECTION_ARGSPEC.keys()
    for name, spec in CONNECTION_ARGSPEC.items():
        doc = documented[name]
        assert (doc['type'], doc.get('default'), doc.get('aliases')) == (spec['type'], spec.get('default'), spec.get('aliases')), name
        variables = spec.get('fallback', (None, []))[1]
        assert all('E(%s)' % variable in ' '.join(doc['description']) for variable in variables), name
