# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# Copyright (c) 2026, puls.proxmox contributors

from __future__ import annotations


class ModuleDocFragment:
    """The connection options every API module shares (puls.proxmox.connection), and its action group."""

    DOCUMENTATION = r'''
options:
  api_url:
    description:
      - Address of the Proxmox VE API, for example V(https://pve.example.com:8006).
      - V(pve.example.com), V(pve.example.com:8006) and V(https://pve.example.com:8006/api2/json) work too.
        The scheme is C(https) and the port defaults to C(8006). Behind a reverse proxy, give its port and path,
        for example V(https://proxy.example.com:443/pve).
      - If not set, the environment variable E(PROXMOX_URL) is used, then E(PROXMOX_HOST).
      - Required, as the option or from the environment.
    type: str
    aliases: [api_host]
  api_user:
    description:
      - User to call the API as, with its realm, for example V(root@pam) or V(automation@pve).
        With token authentication, the user who owns the token.
      - If not set, E(PROXMOX_USER) is used.
      - Required, as the option or from the environment (unless O(api_token_name) is a full token id).
    type: str
  api_token_name:
    description:
      - Name of the API token, the part after C(!) in V(root@pam!ansible). The full token id is accepted too.
      - If not set, E(PROXMOX_TOKEN_NAME) is used, then E(PROXMOX_TOKEN_ID).
    type: str
    aliases: [api_token_id]
  api_token_secret:
    description:
      - >-
        Secret of the API token. When it is set, the module authenticates with the token
        (C(Authorization: PVEAPIToken=USER@REALM!NAME=SECRET)) and O(api_password) is not used.
      - A token with privilege separation (the PVE default) needs its own ACL entries; a permission
        error names the privilege and path to grant.
      - If not set, E(PROXMOX_TOKEN_SECRET) is used.
    type: str
  api_password:
    description:
      - Password of O(api_user), used when no O(api_token_secret) is set. The module logs in for a ticket,
        and logs in again once if the ticket expires or is revoked during the run.
      - If not set, E(PROXMOX_PASSWORD) is used.
      - One of O(api_token_secret) and O(api_password) is required.
    type: str
  validate_certs:
    description:
      - Verify the TLS certificate of the API. V(false) is for labs only, and the module warns about it.
      - This setting and O(ca_path) take precedence over E(REQUESTS_CA_BUNDLE) and E(CURL_CA_BUNDLE).
      - If not set, E(PROXMOX_VERIFY_SSL) is used.
    type: bool
    default: true
  ca_path:
    description:
      - CA certificate file (PEM) or hashed directory to verify the API's certificate with, for example a copy
        of the cluster CA C(/etc/pve/pve-root-ca.pem). Not used when O(validate_certs=false).
      - Unset means the system's CA store (or E(REQUESTS_CA_BUNDLE) when that is set).
      - If not set, E(PROXMOX_CA_PATH) is used.
    type: path
  api_timeout:
    description:
      - Seconds to wait for the connection and for the answer of one API request.
      - Requests that are safe to repeat (reads, lock timeouts, a cluster without quorum) are retried with
        backoff for up to two minutes in total. A create is never sent twice blindly.
      - Waiting for a task (a clone, a start, a download) is not limited by this; each module has its own
        deadline for that.
    type: int
    default: 30
requirements:
  - proxmoxer >= 2.0 (on the controller)
  - requests (on the controller)
notes:
  - The connection options can be set once for every module of this collection with
    C(module_defaults) and the action group C(group/puls.proxmox.pve).
'''

    ACTION_GROUP = r'''
attributes:
  action_group:
    description: Use C(group/puls.proxmox.pve) in C(module_defaults) to set the connection options for this module.
    support: full
    membership:
      - puls.proxmox.pve
'''
