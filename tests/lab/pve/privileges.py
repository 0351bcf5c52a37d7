"""API token privilege separation as PVE computes it (PVE/RPCEnvironment.pm `permissions`, pveum.adoc "API Tokens").

A token's effective privileges on a path are its user's, when the token was made with `privsep 0`; with
`privsep 1` (PVE's default) they are the intersection of its user's and the token's own ACL entries, so a
fresh token can do nothing and a token never holds more than its user. fakepve takes the union of both.

Tokens put straight into `apitokens` (the seed's root@pam!puls, older tests) act as `privsep 0` tokens.
"""

import re

from fakepve import shapes

from .cloudinit import CLOUDINIT_KEYS

# qemu-server PVE/API2/Qemu.pm, $generaloptions: the keys VM.Config.Options guards.
GENERAL_OPTIONS = (
    'agent',
    'autostart',
    'bios',
    'description',
    'keyboard',
    'localtime',
    'migrate_downtime',
    'migrate_speed',
    'name',
    'onboot',
    'ostype',
    'protection',
    'reboot',
    'startdate',
    'startup',
    'tdf',
    'template',
)
# check_vm_modify_config_perm takes any of these for a cloud-init key (check_vm_perm with $any): PVE's check_any,
# whose refusal names them joined by "|".
CLOUDINIT_PRIVS = 'VM.Config.Cloudinit|VM.Config.Network'
# The paths PVE always reports on (besides ACL paths and pool members).
TOP_LEVEL_PATHS = ('/', '/access', '/access/groups', '/nodes', '/pool', '/sdn', '/storage', '/vms')


class PrivilegesMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # 'user@realm!name' -> True when the token has privilege separation.
        self.token_privsep = {}

    def add_api_token(self, userid, name, secret, grants, privsep=True, user_grants=None):
        """Make user `userid` (if new) and its API token `name`, as `pveum user token add USER NAME --privsep N`,
        and grant privileges per path: grants ({path: privileges}) to the token, user_grants to the user (default:
        the same as the token's, as the recipe in docs/privileges.md grants one role to both). Returns the token id."""
        if userid.split('@')[0] == 'root' or '!' in userid:
            raise ValueError(
                f'a token of a non-root user, not {userid!r}: fakepve lets root@pam tokens past its schema '
                'permission checks whatever their privilege separation'
            )
        tokenid = f'{userid}!{name}'
        self.apitokens[tokenid] = secret
        self.token_privsep[tokenid] = privsep
        if self.acl is None:
            self.acl = {}
        for path, privs in grants.items():
            self.grant(tokenid, path, *privs)
        for path, privs in (grants if user_grants is None else user_grants).items():
            self.grant(userid, path, *privs)
        return tokenid

    def _acl_grants(self, userid, path, priv):
        """True if an ACL entry of userid (a user or a token id, no other) gives priv on path or a parent of it."""
        paths = [path]
        if path.startswith('/vms/'):
            vmid = int(path.split('/')[2])
            paths += ['/vms'] + ['/pool/' + name for name, ids in self.pools.items() if vmid in ids]
        elif path.startswith('/storage/'):
            sid = path.split('/')[2]
            paths += ['/pool/' + name for name, meta in self.pool_info.items() if sid in meta['storage']]
        return any(
            priv in privs and (granted == '/' or any(p == granted or p.startswith(granted + '/') for p in paths)) for granted, privs in self.acl.get(userid, [])
        )

    def _config_priv(self, key):
        """The privilege a config key needs, as qemu-server PVE/API2/Qemu.pm check_vm_modify_config_perm decides it:
        a cloud-init key takes VM.Config.Cloudinit or VM.Config.Network; the general options VM.Config.Options
        (fakepve asks VM.Config.HWType for both)."""
        if key in CLOUDINIT_KEYS or re.fullmatch(r'ipconfig\d+', key):
            return CLOUDINIT_PRIVS
        if key in GENERAL_OPTIONS:
            return 'VM.Config.Options'
        return super()._config_priv(key)

    def check_permissions(self, user, perms, values, declared=None):
        # pve-access-control src/PVE/RPCEnvironment.pm check_api2_permissions: `user => 'all'` lets every
        # authenticated user in before any `check` (fakepve asks the check first; GET /cluster/options has both).
        if user is not None and perms and perms.get('user') == 'all':
            return
        return super().check_permissions(user, perms, values, declared)

    def allowed(self, user, path, priv):
        if '|' in priv:
            # RPCEnvironment.pm check_any: one of the privileges is enough.
            return any(self.allowed(user, path, one) for one in priv.split('|'))
        if self.acl is None or '!' not in user or user.split('!')[0] == 'root@pam':
            return super().allowed(user, path, priv)
        owner = user.split('!')[0]
        held = super().allowed(owner, path, priv)
        if not self.token_privsep.get(user, False):
            return held
        return held and self._acl_grants(user, path, priv)

    async def _permissions(self, v, user):
        """GET /access/permissions as PVE answers it (RPCEnvironment get_effective_permissions): with `path`, the
        privileges held on that path; without, those held on the top-level paths, every ACL path and every pool
        member, paths holding nothing left out."""
        who = v.get('userid') or user
        if self.acl is None or who.split('!')[0] == 'root@pam':
            return await super()._permissions(v, user)
        if v.get('path') is not None:
            paths = [v['path']]
        else:
            paths = set(TOP_LEVEL_PATHS)
            paths.update(path for name in (who, who.split('!')[0]) for path, _privs in self.acl.get(name, []))
            paths.update(f'/vms/{vmid}' for ids in self.pools.values() for vmid in ids)
            paths.update('/storage/' + sid for meta in self.pool_info.values() for sid in meta['storage'])
        held = {path: [p for p in shapes.PRIVILEGES if self.allowed(who, path, p)] for path in sorted(paths)}
        return {path: {p: self._propagates(who, path, p) for p in privs} for path, privs in held.items() if privs}

    def _propagates(self, who, path, priv):
        """The propagate flag PVE reports (pve-access-control RPCEnvironment.pm, permissions): a privilege a guest or storage
        holds only through its pool's ACL is "never set propagation for pool-derived ACLs" (0); the lab grants
        every other ACL entry with propagation. A privsep token's flag is its and its user's, and-ed."""
        owners = [who.split('!')[0]]
        if '!' in who and self.token_privsep.get(who, False):
            owners.append(who)
        return int(
            all(
                any(priv in privs and (granted == '/' or path == granted or path.startswith(granted + '/')) for granted, privs in self.acl.get(owner, []))
                for owner in owners
            )
        )
