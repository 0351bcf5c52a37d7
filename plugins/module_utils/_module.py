# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors
"""The base of every API module: the shared connection options, the client, and result plumbing.

A module file is its documentation and a small main():

    def main():
        module = PveModule(argument_spec=dict(name=dict(type='str', required=True), ...))
        module.run(reconcile, module.client, module.params, check_mode=module.check_mode)

where reconcile() returns dict(changed=..., diff=..., ...) and raises PveApiError on failure.
"""

from __future__ import annotations

import traceback

from ansible.module_utils.basic import AnsibleModule, env_fallback, missing_required_lib

from ansible_collections.puls.proxmox.plugins.module_utils._api import DEFAULT_TIMEOUT, MISSING_LIBRARY, PveClient
from ansible_collections.puls.proxmox.plugins.module_utils._errors import PveApiError
from ansible_collections.puls.proxmox.plugins.module_utils._progress import from_environment as progress_from_environment

# The connection options of every module (documented in the puls.proxmox.connection doc fragment);
# the environment variables after PROXMOX_URL and PROXMOX_TOKEN_NAME are community.proxmox's names.
CONNECTION_ARGSPEC = {
    'api_url': {'type': 'str', 'aliases': ['api_host'], 'fallback': (env_fallback, ['PROXMOX_URL', 'PROXMOX_HOST'])},
    'api_user': {'type': 'str', 'fallback': (env_fallback, ['PROXMOX_USER'])},
    'api_token_name': {'type': 'str', 'aliases': ['api_token_id'], 'fallback': (env_fallback, ['PROXMOX_TOKEN_NAME', 'PROXMOX_TOKEN_ID'])},
    'api_token_secret': {'type': 'str', 'no_log': True, 'fallback': (env_fallback, ['PROXMOX_TOKEN_SECRET'])},
    'api_password': {'type': 'str', 'no_log': True, 'fallback': (env_fallback, ['PROXMOX_PASSWORD'])},
    'validate_certs': {'type': 'bool', 'default': True, 'fallback': (env_fallback, ['PROXMOX_VERIFY_SSL'])},
    'ca_path': {'type': 'path', 'fallback': (env_fallback, ['PROXMOX_CA_PATH'])},
    'api_timeout': {'type': 'int', 'default': DEFAULT_TIMEOUT},
}


def connection_params(params):
    """The connection options out of a module's params, as PveClient's keyword arguments."""
    return {name: params.get(name) for name in CONNECTION_ARGSPEC}


class PveModule:
    """An AnsibleModule with the connection options, a lazily created PveClient, and PveApiError as failure."""

    def __init__(self, argument_spec=None, supports_check_mode=True, **kwargs):
        clash = set(argument_spec or {}) & set(CONNECTION_ARGSPEC)
        if clash:
            raise ValueError('options %s are connection options, defined by PveModule' % ', '.join(sorted(clash)))
        self.ansible = AnsibleModule(argument_spec=dict(CONNECTION_ARGSPEC, **(argument_spec or {})), supports_check_mode=supports_check_mode, **kwargs)
        if MISSING_LIBRARY:
            library, trace = MISSING_LIBRARY
            self.ansible.fail_json(msg=missing_required_lib(library), exception=trace)
        self._client = None

    @property
    def params(self):
        return self.ansible.params

    @property
    def check_mode(self):
        return self.ansible.check_mode

    @property
    def client(self):
        """The PveClient, created on first use; its warnings (such as unverified TLS) are shown once."""
        if self._client is None:
            try:
                self._client = PveClient(**connection_params(self.params))
            except PveApiError as exc:
                self.fail_from(exc)
            self._client.progress = progress_from_environment()
            for warning in self._client.warnings:
                self.warn(warning)
        return self._client

    def run(self, reconcile, *args, **kwargs):
        """Exit with the dict reconcile(*args, **kwargs) returns, or fail with its PveApiError."""
        try:
            result = reconcile(*args, **kwargs)
        except PveApiError as exc:
            self.fail_from(exc)
        self.exit(**result)

    def exit(self, changed=False, diff=None, **result):
        """Exit the module. diff is shown in diff mode; result['warnings'] (a list) become module warnings."""
        for warning in result.pop('warnings', None) or ():
            self.warn(warning)
        if diff is not None and self.ansible._diff:
            result['diff'] = diff
        self.ansible.exit_json(changed=changed, **result)

    def fail(self, msg, **result):
        self.ansible.fail_json(msg=msg, **result)

    def fail_from(self, exc):
        """Fail with a PveApiError's message and facts (already free of secrets).

        The traceback goes as text: ansible-core before 2.19 puts ``exception`` into the result as it is, and its JSON
        encoder cannot write an exception object.
        """
        trace = ''.join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.ansible.fail_json(msg=str(exc), exception=trace, **exc.details())

    def warn(self, warning):
        self.ansible.warn(warning)
