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
"""

from fakepve.routing import PveError, split_list

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
