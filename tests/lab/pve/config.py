"""VM config reads and writes as PVE does them (qemu-server PVE/API2/Qemu.pm, update_vm and vm_config)."""

import functools
import re

from fakepve import schema as pve_schema
from fakepve.model import PveError
from fakepve.qemu import DRIVE_KEY, with_mac
from fakepve.routing import param_error, split_list
from fakepve.server import ok, params

from .cloudinit import is_cloudinit_key

CONFIG = '/nodes/{node}/qemu/{vmid}/config'
# Qemu.pm vm_config: the password never leaves the node.
PASSWORD_MASK = '**********'


@functools.lru_cache(maxsize=None)
def _schema_properties(method):
    info = pve_schema.load().paths[CONFIG][method]
    spec = info['returns'] if method == 'GET' else info['parameters']
    return spec['properties']


def typed(key, value):
    """A config value as parse_vm_config returns it: integers and booleans (yes/true -> 1) as numbers."""
    spec = pve_schema._prop(_schema_properties('GET'), key)
    if spec is None or spec.get('type') not in ('integer', 'number', 'boolean'):
        return value
    coerced, error = pve_schema.check_value(spec, value)
    return value if error else coerced


def unique_tags(text):
    """pve-guest-common GuestHelpers::get_unique_tags (default tag-style): split on , ; and space,
    lower-case, de-duplicate, sort, join with ;."""
    return ';'.join(sorted(set(tag.lower() for tag in split_list(text))))


def normalize(values):
    """Values as PVE writes them: notes without trailing white space (parse_vm_config's s/\\s+$//), tags through
    get_unique_tags, and a net device with a MAC (PVE adds a new random one when the value has none)."""
    out = dict(values)
    if out.get('description') is not None:
        out['description'] = str(out['description']).rstrip()
    if out.get('tags'):
        out['tags'] = unique_tags(out['tags'])
    for key in out:
        if re.fullmatch(r'net\d+', key):
            out[key] = with_mac(out[key])
    return out


def cleanup_pending(vm):
    """AbstractConfig::cleanup_pending: drop pending values equal to the current ones and deletes of unset keys."""
    for key, value in list(vm.pending.items()):
        if (value is None and key not in vm.config) or \
                (value is not None and key in vm.config and str(vm.config[key]) == str(value)):
            del vm.pending[key]


class ConfigMixin(object):
    async def _config_get(self, request):
        vm = self._vm(request, 'VM.Audit')
        # The config with pending changes applied unless current=1 (AbstractConfig::load_current_config).
        current = self._verify(request, await params(request)).get('current')
        config = dict(vm.config)
        if not current:
            for key, value in vm.pending.items():
                if value is None:
                    config.pop(key, None)
                else:
                    config[key] = value
        out = dict((key, typed(key, value)) for key, value in config.items())
        if 'cipassword' in out:
            out['cipassword'] = PASSWORD_MASK
        out['digest'] = vm.digest()
        return ok(out)

    async def _qm_create(self, v, user):
        return await super()._qm_create(normalize(v), user)

    async def _apply_config(self, vm, user, p):
        updates = normalize(p)
        deletes = split_list(updates.pop('delete', None))
        self._check_deletes(vm, updates, deletes)
        running, before = vm.status == 'running', dict(vm.config)
        made = self._allocate_drives(vm, user, updates)
        try:
            await super()._apply_config(vm, user, dict(updates, delete=','.join(deletes)))
        except PveError:
            for volid in made:
                self._qm_free(volid)
            raise
        if running:
            self._fastplug(vm, updates, deletes, before)
        else:
            self._detach_drives(vm, before, deletes + [key for key in updates if DRIVE_KEY.match(key)])
        cleanup_pending(vm)

    def _check_deletes(self, vm, updates, deletes):
        """update_vm's checks of delete= (PVE::Tools::split_list separates it on , ; and space)."""
        for key in deletes:
            if key in updates:
                raise param_error(delete="you can't use '-{0}' and -delete {0}' at the same time".format(key))
            if pve_schema._prop(_schema_properties('PUT'), key) is None:
                raise param_error(delete="unknown option '{0}'".format(key))
        self._check_drive_deletes(vm, deletes)

    @staticmethod
    def _fastplug(vm, updates, deletes, before):
        """What PVE applies to a running VM at once (QemuServer.pm vmconfig_hotplug_pending) differs from fakepve:
        cloud-init options are fast-plug since qemu-server commit 71d9006b; agent is not."""
        for key in updates.keys() | set(deletes):
            if is_cloudinit_key(key) and key in vm.pending:
                value = vm.pending.pop(key)
                if value is None:
                    vm.config.pop(key, None)
                else:
                    vm.config[key] = value
        if 'agent' in updates:
            vm.pending['agent'] = vm.config.pop('agent')
            if 'agent' in before:
                vm.config['agent'] = before['agent']
