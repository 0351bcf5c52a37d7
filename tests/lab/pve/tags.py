"""The datacenter's tag settings and a guest's tags as PVE writes and permits them.

`lab.pve.datacenter` holds the options of /etc/pve/datacenter.cfg as pve-cluster src/PVE/DataCenterConfig.pm
parse_datacenter_config returns them: `tag-style` ({'case-sensitive': 1, 'ordering': 'config'}), `user-tag-access`
({'user-allow': 'list', 'user-allow-list': [...]}) and `registered-tags` ([...]).

- `GET /cluster/options` (pve-manager PVE/API2/Cluster.pm get_options): every option with Sys.Audit on /, else
  only `console` and `tag-style`; and `allowed-tags`, the tags the user may set (get_allowed_tags).
- A VM's tags on create, clone and update go through get_unique_tags (pve-guest-common src/PVE/GuestHelpers.pm):
  split on `,; ` and blanks, lower-cased unless `case-sensitive`, deduplicated, sorted unless `ordering=config`.
- Setting or removing a tag (create_vm, update_vm: assert_tag_permissions) needs Sys.Modify on / when the tag is
  registered, or when `user-allow` is not `free` and the tag is not allowed (get_allowed_tags: `user-allow-list`
  unless `none`, the tags of the guests the user may audit for `existing`); a user with Sys.Modify on / may set any.
- A container's tags likewise (pve-container): update_pct_config writes them through get_unique_tags (src/PVE/LXC/
  Config.pm), on create and update, and check_ct_modify_config_perm (src/PVE/LXC.pm; nothing for root@pam) checks
  assert_tag_permissions against the tags in the config (none on create: `$oldconf` is undef), with the tags as sent.
  fakepve lower-cases and sorts a container's tags whatever the tag-style and checks only VM.Config.Options for them.
"""

from fakepve import lxc
from fakepve.routing import PveError, split_list

_fakepve_normalise = lxc.normalise


def _normalise(key, value):
    """fakepve's lxc.normalise, but a container's tags as TagsMixin wrote them (per tag-style), not lower-cased."""
    return value if key == 'tags' else _fakepve_normalise(key, value)


lxc.normalise = _normalise

OPTIONS = '/cluster/options'


def unique_tags(text, style=None):
    """GuestHelpers::get_unique_tags for the datacenter's tag-style (style: its parsed property string)."""
    style = style or {}
    case_sensitive = bool(int(style.get('case-sensitive') or 0))
    tags = split_list(text)
    if style.get('ordering') != 'config':
        tags = sorted(tags, key=(lambda tag: tag) if case_sensitive else str.lower)
    unique = []
    for tag in tags:
        tag = tag if case_sensitive else tag.lower()
        if tag not in unique:
            unique.append(tag)
    return ';'.join(unique)


class TagsMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.datacenter = {}
        # VMID -> the tags a container's create sent, which check_ct_modify_config_perm checks as sent.
        self._ct_create_tags = {}

    def tag_style(self):
        return self.datacenter.get('tag-style') or {}

    def _routes_lab_tags(self):
        return [('GET', OPTIONS, self._lab_cluster_options)]

    async def _lab_cluster_options(self, v, user):
        if self.allowed(user, '/', 'Sys.Audit'):
            options = dict(self.datacenter)
        else:
            options = {key: self.datacenter[key] for key in ('console', 'tag-style') if key in self.datacenter}
        allowed, _privileged, _free = self.allowed_tags(user)
        return dict(options, **{'allowed-tags': sorted(allowed)})

    def allowed_tags(self, user):
        """GuestHelpers::get_allowed_tags: (the tags user may set, the registered ones, whether any tag is free)."""
        privileged_user = self.allowed(user, '/', 'Sys.Modify')
        registered = set(self.datacenter.get('registered-tags') or ())
        access = self.datacenter.get('user-tag-access') or {}
        user_allow = access.get('user-allow', 'free')
        allowed = set()
        if user_allow != 'none' or privileged_user:
            allowed |= set(access.get('user-allow-list') or ())
        if user_allow in ('free', 'existing') or privileged_user:
            for guest in self.vms:
                if privileged_user or self.allowed(user, f'/vms/{guest.vmid}', 'VM.Audit'):
                    allowed |= set(split_list(guest.config.get('tags')))
        allowed = allowed | registered if privileged_user else allowed - registered
        return allowed, registered, user_allow == 'free'

    async def _qm_create(self, v, user):
        if v.get('tags') is not None:
            # qemu-server PVE/API2/Qemu.pm create_vm passes `{}` as the old tags: split_list makes it one tag
            # "HASH(0x...)", which a restricted user-allow refuses like any tag not allowed.
            self.assert_tag_permissions(user, 'HASH(0x55d5c0a1b2c8)', v['tags'])
        return await super()._qm_create(v, user)

    async def _apply_config(self, vm, user, p):
        # update_vm: against the tags in effect ($conf->{tags}), for a set and for a delete.
        if 'tags' in p or 'tags' in split_list(p.get('delete')):
            self.assert_tag_permissions(user, vm.config.get('tags'), p.get('tags'))
        return await super()._apply_config(vm, user, p)

    def assert_tag_permissions(self, user, old, new):
        """GuestHelpers::assert_tag_permissions: each tag whose count differs between old and new."""
        if self.allowed(user, '/', 'Sys.Modify'):
            return
        before, after = split_list(old or ''), split_list(new or '')
        allowed, registered, free = self.allowed_tags(user)
        for tag in sorted(set(before) | set(after)):
            if before.count(tag) == after.count(tag):
                continue
            if (tag not in allowed and not free) or tag in registered:
                raise PveError(403, f"Permission check failed (/, Sys.Modify for modifying tag '{tag}')")

    async def _lxc_create(self, user, v):
        if v.get('tags') is None:
            return await super()._lxc_create(user, v)
        vmid = int(v['vmid'])
        self._ct_create_tags[vmid] = v['tags']
        try:
            return await super()._lxc_create(user, dict(v, tags=unique_tags(v['tags'], self.tag_style())))
        finally:
            self._ct_create_tags.pop(vmid, None)

    async def _update_config(self, ct, user, values, deletes, reverts):
        # Checked as sent (_check_modify_perm) before update_pct_config writes them.
        if values.get('tags') is not None:
            values = dict(values, tags=unique_tags(values['tags'], self.tag_style()))
        return await super()._update_config(ct, user, values, deletes, reverts)

    def _check_modify_perm(self, user, vmid, pool, old, new, deletes, unprivileged):
        """check_ct_modify_config_perm: VM.Config.Options (fakepve's), then assert_tag_permissions for tags."""
        super()._check_modify_perm(user, vmid, pool, old, new, deletes, unprivileged)
        if self.acl is None or user == 'root@pam':
            return
        before = (old or {}).get('tags')
        if 'tags' in new:
            self.assert_tag_permissions(user, before, self._ct_create_tags.get(vmid, new['tags']) if old is None else new['tags'])
        if 'tags' in deletes:
            self.assert_tag_permissions(user, before, '')
