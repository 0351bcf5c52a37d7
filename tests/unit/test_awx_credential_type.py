# Copyright (c) 2026, puls.proxmox contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""docs/awx/credential-type.yml and docs/awx/destroy-survey.json, checked as AWX checks them when they are
created, and the credential type's injectors rendered as AWX renders them when a job starts: the environment
they give a job must be what the collection's connection options read.

The AWX rules here follow AWX's own code: the JSON schemas and template checks of CredentialTypeInputField and
CredentialTypeInjectorField (awx/main/fields.py), the injection of CredentialType.inject_credential
(awx/main/models/credential/__init__.py), and the survey checks of JobTemplateSurveySpec._validate_spec_data
(awx/api/views/__init__.py).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
import types
from pathlib import Path

import jsonschema
import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ansible_collections.puls.proxmox.plugins.module_utils._api import parse_api_url, resolve_credential, tls_verify
from ansible_collections.puls.proxmox.plugins.module_utils._module import CONNECTION_ARGSPEC

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / 'docs' / 'awx'
CREDENTIAL_TYPE = DOCS / 'credential-type.yml'
DESTROY_SURVEY = DOCS / 'destroy-survey.json'
GUIDES = (REPO / 'docs' / 'awx.md', REPO / 'docs' / 'connection.md')
# A path of this repository named in a guide; playbooks/ and inventory/ there are the user's project.
REPOSITORY_PATH = re.compile(r'(?<![\w./-])((?:docs|examples|meta|plugins|roles|tests)/[\w./-]*[\w/])')

# Read by community.proxmox, not by this collection: injected so that one credential serves both.
COMMUNITY_PROXMOX_ONLY = {'PROXMOX_VALIDATE_CERTS'}
# The credential type is for API tokens; password login stays for ad hoc use outside AWX (docs/connection.md).
READ_BUT_NOT_INJECTED = {'PROXMOX_PASSWORD'}

SECRET = 'b4d4c0de-0000-4000-8000-5ec2e75ec2e7'
CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBlab-ca\n-----END CERTIFICATE-----\n'
INPUTS = {
    'api_url': 'https://pve.example.com:8006',
    'api_user': 'automation@pve',
    'api_token_name': 'ansible',
    'api_token_secret': SECRET,
    'ca_certificate': CA_PEM,
}

# AWX's schema of CredentialType.inputs.
AWX_INPUTS_SCHEMA = {
    'type': 'object',
    'additionalProperties': False,
    'properties': {
        'required': {'type': 'array', 'items': {'type': 'string'}},
        'fields': {
            'type': 'array',
            'items': {
                'type': 'object',
                'additionalProperties': False,
                'required': ['id', 'label'],
                'properties': {
                    'type': {'enum': ['string', 'boolean']},
                    'format': {'enum': ['ssh_private_key', 'url']},
                    'choices': {'type': 'array', 'minItems': 1, 'items': {'type': 'string'}, 'uniqueItems': True},
                    'id': {'type': 'string', 'pattern': '^[a-zA-Z_]+[a-zA-Z0-9_]*$'},
                    'label': {'type': 'string'},
                    'help_text': {'type': 'string'},
                    'multiline': {'type': 'boolean'},
                    'secret': {'type': 'boolean'},
                    'ask_at_runtime': {'type': 'boolean'},
                    'default': {},
                },
            },
        },
    },
}

# AWX's schema of CredentialType.injectors.
AWX_INJECTORS_SCHEMA = {
    'type': 'object',
    'additionalProperties': False,
    'properties': {
        'file': {'type': 'object', 'additionalProperties': False, 'patternProperties': {r'^template(\.[a-zA-Z_]+[a-zA-Z0-9_]*)?$': {'type': 'string'}}},
        'env': {
            'type': 'object',
            'additionalProperties': False,
            'patternProperties': {'^[a-zA-Z_]+[a-zA-Z0-9_]*$': {'type': 'string', 'pattern': '^[\x00-\x7f]*$'}},
        },
        'extra_vars': {'type': 'object', 'additionalProperties': False, 'patternProperties': {'^[a-zA-Z_]+[a-zA-Z0-9_]*$': {'type': 'string'}}},
    },
}

AWX_SURVEY_TYPES = {'text': str, 'textarea': str, 'password': str, 'multiplechoice': str, 'multiselect': str, 'integer': int, 'float': float}


def load_credential_type():
    return yaml.safe_load(CREDENTIAL_TYPE.read_text())


def connection_variables():
    """Every environment variable the collection's connection options fall back to, from CONNECTION_ARGSPEC."""
    names = set()
    for option in CONNECTION_ARGSPEC.values():
        if 'fallback' in option:
            names.update(option['fallback'][1])
    return names


def awx_inject(credential_type, inputs, private_data_dir):
    """The environment AWX gives a job for a credential of this type with these inputs, as
    CredentialType.inject_credential builds it: (env, safe_env). safe_env is what AWX stores with the job,
    secret inputs masked. File injectors are written to private_data_dir/env, as AWX writes them."""
    fields = credential_type['inputs']['fields']
    secret_ids = {field['id'] for field in fields if field.get('secret')}
    tower = types.SimpleNamespace()
    namespace, safe_namespace = {'tower': tower}, {'tower': tower}
    for name, value in inputs.items():
        if isinstance(value, bool):
            namespace[name] = safe_namespace[name] = value
            continue
        if name in secret_ids:
            safe_namespace[name] = '**********'
        elif value:
            safe_namespace[name] = value
        if value:
            namespace[name] = value
    for field in fields:
        # AWX: a boolean input that was never set is false, whatever the field's default.
        if field.get('type') == 'boolean' and field['id'] not in inputs:
            namespace[field['id']] = safe_namespace[field['id']] = False
    sandbox = ImmutableSandboxedEnvironment()
    env_dir = Path(private_data_dir) / 'env'
    env_dir.mkdir(parents=True, exist_ok=True)
    for label, template in credential_type['injectors'].get('file', {}).items():
        handle, path = tempfile.mkstemp(dir=env_dir)
        with os.fdopen(handle, 'w') as written:
            written.write(sandbox.from_string(template).render(**namespace))
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IWGRP)
        if '.' in label:
            if not isinstance(getattr(tower, 'filename', None), types.SimpleNamespace):
                tower.filename = types.SimpleNamespace()
            setattr(tower.filename, label.split('.', 1)[1], path)
        else:
            tower.filename = path
    env, safe_env = {}, {}
    for name, template in credential_type['injectors'].get('env', {}).items():
        env[name] = sandbox.from_string(template).render(**namespace)
        safe_env[name] = sandbox.from_string(template).render(**safe_namespace)
    return env, safe_env


def connection_params(monkeypatch, env):
    """The connection options a module gets from env alone (no module arguments), as AnsibleModule resolves
    their environment fallbacks."""
    for name in connection_variables() | COMMUNITY_PROXMOX_ONLY:
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = ArgumentSpecValidator(CONNECTION_ARGSPEC).validate({})
    assert not result.error_messages, result.error_messages
    return result.validated_parameters


@pytest.fixture
def credential_type():
    return load_credential_type()


def test_credential_type_passes_awx_schema_validation(credential_type):
    assert set(credential_type) == {'name', 'description', 'kind', 'inputs', 'injectors'}
    assert credential_type['kind'] == 'cloud'  # the only kind a custom type can have
    jsonschema.validate(credential_type['inputs'], AWX_INPUTS_SCHEMA)
    jsonschema.validate(credential_type['injectors'], AWX_INJECTORS_SCHEMA)


def test_credential_type_passes_awx_field_rules(credential_type):
    fields = credential_type['inputs']['fields']
    ids = [field['id'] for field in fields]
    assert len(ids) == len(set(ids)) and 'tower' not in ids
    assert set(credential_type['inputs']['required']) <= set(ids)
    for field in fields:
        python_type = {'string': str, 'boolean': bool}[field.get('type', 'string')]
        if 'default' in field:
            assert isinstance(field['default'], python_type), field['id']
        if python_type is bool:
            assert not {'choices', 'multiline', 'format', 'secret'} & set(field), field['id']


def test_injector_templates_use_only_declared_inputs(credential_type):
    # AWX renders every injector template at creation with each input set to 'EXAMPLE' and fails on anything else.
    namespace = {field['id']: 'EXAMPLE' for field in credential_type['inputs']['fields']}
    files = list(credential_type['injectors'].get('file', {}))
    assert files == ['template'], 'one file, referenced as tower.filename'
    namespace['tower'] = types.SimpleNamespace(filename='EXAMPLE_FILENAME')
    sandbox = ImmutableSandboxedEnvironment(undefined=StrictUndefined)
    for kind in ('file', 'env', 'extra_vars'):
        for name, template in credential_type['injectors'].get(kind, {}).items():
            assert isinstance(sandbox.from_string(template).render(namespace), str), name
    for name in credential_type['injectors']['env']:
        assert not name.startswith('ANSIBLE_'), 'AWX refuses environment variables that configure Ansible'


def test_token_secret_is_the_secret_input_and_the_ca_a_multiline_one(credential_type):
    fields = {field['id']: field for field in credential_type['inputs']['fields']}
    assert fields['api_token_secret'].get('secret') is True
    assert [name for name, field in fields.items() if field.get('secret')] == ['api_token_secret']
    assert fields['ca_certificate'].get('multiline') is True
    assert fields['skip_tls_verify']['type'] == 'boolean' and fields['skip_tls_verify']['default'] is False


def test_every_connection_variable_the_modules_read_is_injected(credential_type):
    read = connection_variables()
    assert {'PROXMOX_URL', 'PROXMOX_HOST', 'PROXMOX_TOKEN_NAME', 'PROXMOX_TOKEN_ID', 'PROXMOX_TOKEN_SECRET'} <= read
    injected = set(credential_type['injectors']['env'])
    assert read - READ_BUT_NOT_INJECTED <= injected, 'not injected: %s' % sorted(read - READ_BUT_NOT_INJECTED - injected)
    assert injected - read == COMMUNITY_PROXMOX_ONLY, 'injected but read by no one: %s' % sorted(injected - read)


def test_injected_environment_gives_the_modules_the_token_and_the_ca_file(credential_type, tmp_path, monkeypatch):
    env, _safe = awx_inject(credential_type, INPUTS, tmp_path)
    params = connection_params(monkeypatch, env)
    assert params['api_url'] == 'https://pve.example.com:8006'
    assert parse_api_url(params['api_url']).url == 'https://pve.example.com:8006/api2/json'
    credential = resolve_credential(params['api_user'], params['api_token_name'], params['api_token_secret'])
    assert credential.token_id == 'automation@pve!ansible' and credential.token_secret == SECRET
    assert params['validate_certs'] is True
    ca_file = Path(tls_verify(params['validate_certs'], params['ca_path']))
    assert ca_file.parent == tmp_path / 'env' and ca_file.read_text() == CA_PEM


def test_without_a_ca_certificate_the_modules_verify_against_the_system_store(credential_type, tmp_path, monkeypatch):
    inputs = dict(INPUTS)
    del inputs['ca_certificate']
    env, _safe = awx_inject(credential_type, inputs, tmp_path)
    assert env['PROXMOX_CA_PATH'] == ''
    params = connection_params(monkeypatch, env)
    assert tls_verify(params['validate_certs'], params['ca_path']) is True


def test_an_unset_verify_flag_keeps_certificate_verification_on(credential_type, tmp_path, monkeypatch):
    env, _safe = awx_inject(credential_type, INPUTS, tmp_path)
    assert env['PROXMOX_VERIFY_SSL'] == env['PROXMOX_VALIDATE_CERTS'] == 'true'
    assert connection_params(monkeypatch, env)['validate_certs'] is True


def test_skip_tls_verify_turns_verification_off_for_both_collections(credential_type, tmp_path, monkeypatch):
    env, _safe = awx_inject(credential_type, dict(INPUTS, skip_tls_verify=True), tmp_path)
    assert env['PROXMOX_VERIFY_SSL'] == env['PROXMOX_VALIDATE_CERTS'] == 'false'
    params = connection_params(monkeypatch, env)
    assert tls_verify(params['validate_certs'], params['ca_path']) is False


@pytest.mark.parametrize(
    'api_url, host',
    [
        ('https://pve.example.com:8006', 'pve.example.com:8006'),
        ('https://pve.example.com:8006/api2/json', 'pve.example.com:8006'),
        ('https://pve.example.com', 'pve.example.com'),
        ('pve.example.com:8443', 'pve.example.com:8443'),
        ('https://[fd00::10]:8006/', '[fd00::10]:8006'),
    ],
)
def test_community_proxmox_host_reaches_the_same_api_as_the_url(credential_type, tmp_path, monkeypatch, api_url, host):
    env, _safe = awx_inject(credential_type, dict(INPUTS, api_url=api_url), tmp_path)
    assert env['PROXMOX_HOST'] == host
    community_only = {name: value for name, value in env.items() if name not in ('PROXMOX_URL', 'PROXMOX_TOKEN_NAME')}
    params = connection_params(monkeypatch, community_only)
    assert parse_api_url(params['api_url']) == parse_api_url(api_url)
    assert params['api_token_name'] == 'ansible'


def test_a_full_token_id_as_token_name_works_for_both_collections(credential_type, tmp_path, monkeypatch):
    env, _safe = awx_inject(credential_type, dict(INPUTS, api_token_name='automation@pve!ansible'), tmp_path)
    assert env['PROXMOX_TOKEN_ID'] == 'ansible'
    params = connection_params(monkeypatch, env)
    assert resolve_credential(params['api_user'], params['api_token_name'], params['api_token_secret']).token_id == 'automation@pve!ansible'


def test_token_secret_reaches_only_its_variable_and_is_masked_in_the_stored_environment(credential_type, tmp_path):
    env, safe_env = awx_inject(credential_type, INPUTS, tmp_path)
    assert [name for name, value in env.items() if SECRET in value] == ['PROXMOX_TOKEN_SECRET']
    assert safe_env['PROXMOX_TOKEN_SECRET'] == '**********'
    assert not any(SECRET in value for value in safe_env.values())


def test_destroy_survey_is_a_valid_awx_survey_spec():
    survey = json.loads(DESTROY_SURVEY.read_text())
    assert isinstance(survey['name'], str) and isinstance(survey['description'], str)
    assert isinstance(survey['spec'], list) and survey['spec']
    variables = [question['variable'] for question in survey['spec']]
    assert len(variables) == len(set(variables))
    for question in survey['spec']:
        for key in ('type', 'question_name', 'variable'):
            assert isinstance(question[key], str), key
        assert isinstance(question['required'], bool)
        assert question['type'] in AWX_SURVEY_TYPES
        if question.get('default', '') != '':
            assert isinstance(question['default'], AWX_SURVEY_TYPES[question['type']])
        for key in ('min', 'max'):
            assert question.get(key) is None or isinstance(question[key], int), key
        assert re.match(r'^[a-zA-Z_][a-zA-Z0-9_]*$', question['variable'])


def test_destroy_survey_demands_a_typed_confirmation_with_no_prefilled_answer():
    (question,) = json.loads(DESTROY_SURVEY.read_text())['spec']
    assert question['variable'] == 'pve_destroy_confirm'
    assert question['type'] == 'text' and question['required'] is True
    # AWX refuses an answer shorter than min at launch; a default would let the job launch without typing.
    assert question['min'] >= 1 and question.get('default', '') == ''


def test_every_repository_file_the_awx_guides_name_exists():
    named = set()
    for guide in GUIDES:
        named.update(REPOSITORY_PATH.findall(guide.read_text()))
    assert 'docs/awx/credential-type.yml' in named and 'examples/execution-environment.yml' in named
    missing = sorted(path for path in named if not (REPO / path).exists())
    assert not missing, 'named in docs/awx.md or docs/connection.md but not in the repository: %s' % missing


def test_project_playbooks_of_the_awx_guide_import_the_collection_playbooks():
    blocks = dict(re.findall(r'```yaml\n# (playbooks/[\w.-]+\.yml)\n(.*?)```', GUIDES[0].read_text(), re.S))
    assert sorted(blocks) == ['playbooks/destroy.yml', 'playbooks/site.yml']
    for path, collection_playbook in (('playbooks/site.yml', 'puls.proxmox.site'), ('playbooks/destroy.yml', 'puls.proxmox.destroy')):
        (play,) = yaml.safe_load(blocks[path])
        assert play['ansible.builtin.import_playbook'] == collection_playbook and play['name']
