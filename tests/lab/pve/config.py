"""VM config reads and writes as PVE does them (qemu-server PVE/API2/Qemu.pm, update_vm and vm_config)."""

import functools
import re

from fakepve import schema as pve_schema
from fakepve.model import PveError
from fakepve.qemu import DRIVE_KEY, NET_MODELS, is_cdrom, split_drive, with_mac
from fakepve.routing import param_error, split_list
from fakepve.server import ok, params

from .cloudinit import is_cloudinit_key, is_recorded_key, record_change
from .tags import unique_tags

CONFIG = '/nodes/{node}/qemu/{vmid}/config'
# Qemu.pm vm_config: the password never leaves the node.
PASSWORD_MASK = '**********'
# qemu-server PVE/QemuServer.pm: the default of the hotplug option ('1' means it, '0' nothing; parse_hotplug_features).
DEFAULT_HOTPLUG = 'network,disk,usb'
# qemu-server PVE/QemuServer/Memory.pm $STATICMEM: qemu_memory_hotplug refuses less.
STATIC_MEMORY = 1024
# qemu-server PVE/QemuServer.pm vmconfig_update_net: a change of these needs the NIC unplugged (hotplug network).
NET_REPLUG_PROPERTIES = ('model', 'macaddr', 'queues', 'mtu')
# qemu-server PVE/QemuServer.pm vmconfig_update_disk: what a running VM's disk cannot change at once.
COLD_DRIVE_PROPERTIES = ('aio', 'discard', 'iothread', 'queues', 'product', 'cache', 'ssd', 'vendor', 'ro')


@functools.cache
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


def normalize(values, tag_style=None):
    """Values as PVE writes them: notes without trailing white space (parse_vm_config's s/\\s+$//), tags through
    get_unique_tags for the datacenter's tag_style (tags.py), and a net device with a MAC (PVE adds a new random one
    when the value has none)."""
    out = dict(values)
    if out.get('description') is not None:
        out['description'] = str(out['description']).rstrip()
    if out.get('tags'):
        out['tags'] = unique_tags(out['tags'], tag_style)
    for key in out:
        if re.fullmatch(r'net\d+', key):
            out[key] = with_mac(out[key])
    return out


def cleanup_pending(vm):
    """AbstractConfig::cleanup_pending: drop pending values equal to the current ones and deletes of unset keys."""
    for key, value in list(vm.pending.items()):
        if (value is None and key not in vm.config) or (value is not None and key in vm.config and str(vm.config[key]) == str(value)):
            del vm.pending[key]


class ConfigMixin:
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
        out = {key: typed(key, value) for key, value in config.items()}
        if 'cipassword' in out:
            out['cipassword'] = PASSWORD_MASK
        out['digest'] = vm.digest()
        return ok(out)

    async def _qm_create(self, v, user):
        return await super()._qm_create(normalize(v, self.tag_style()), user)

    async def _apply_config(self, vm, user, p):
        updates = normalize(p, self.tag_style())
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
            # A disk the running VM let go of at once is kept as unusedN (vmconfig_delete_or_detach_drive).
            self._detach_drives(vm, before, [key for key in deletes if DRIVE_KEY.match(key) and not is_cdrom(*split_drive(before.get(key) or ''))])
        else:
            self._detach_drives(vm, before, deletes + [key for key in updates if DRIVE_KEY.match(key)])
        cleanup_pending(vm)

    def _check_deletes(self, vm, updates, deletes):
        """update_vm's checks of delete= (PVE::Tools::split_list separates it on , ; and space)."""
        for key in deletes:
            if key in updates:
                raise param_error(delete=f"you can't use '-{key}' and -delete {key}' at the same time")
            if pve_schema._prop(_schema_properties('PUT'), key) is None:
                raise param_error(delete=f"unknown option '{key}'")
        self._check_drive_deletes(vm, deletes)

    def _fastplug(self, vm, updates, deletes, before):
        """What PVE applies to a running VM at once (qemu-server PVE/QemuServer.pm vmconfig_hotplug_pending) differs
        from fakepve: cloud-init options are fast-plug since qemu-server commit 71d9006b; agent is not; a NIC's
        bridge, tag, trunks, firewall, rate and link_down change live whatever hotplug says (vmconfig_update_net),
        its model, MAC, queues or MTU, a new NIC and a removed one only with hotplug ``network``; memory changes
        live with hotplug ``memory`` (Memory.pm qemu_memory_hotplug, from 1024 MiB up). The changes a running VM
        takes of the keys PVE tracks for cloud-init are recorded for GET .../cloudinit ($cloudinit_record_changed),
        and with hotplug ``cloudinit`` the drive is regenerated at once."""
        features = hotplug_features(before.get('hotplug', '1'))
        for key in updates.keys() | set(deletes):
            if key not in vm.pending:
                continue
            if is_cloudinit_key(key) or self._hotplugs(key, vm.pending[key], before.get(key), features):
                value = vm.pending.pop(key)
                if value is None:
                    vm.config.pop(key, None)
                else:
                    vm.config[key] = value
        if 'agent' in updates:
            vm.pending['agent'] = vm.config.pop('agent')
            if 'agent' in before:
                vm.config['agent'] = before['agent']
        record = vm.__dict__.setdefault('cloudinit_record', {})
        for key in sorted(updates.keys() | set(deletes)):
            if is_recorded_key(key) and before.get(key) != vm.config.get(key):
                record_change(record, key, before.get(key), vm.config.get(key))
        if 'cloudinit' in features and record:
            self.generate_cloudinit(vm)

    @staticmethod
    def _hotplugs(key, new, old, features):
        """Whether vmconfig_hotplug_pending applies the change of ``key`` (``new`` None: a delete) to the running VM."""
        if re.fullmatch(r'net\d+', key):
            if new is None or old is None:
                return 'network' in features
            before, after = net_properties(old), net_properties(new)
            replug = any(before.get(prop) != after.get(prop) for prop in NET_REPLUG_PROPERTIES)
            return 'network' in features if replug or not (before.get('bridge') and after.get('bridge')) else True
        if DRIVE_KEY.match(key):
            return disk_hotplugs(key, new, old, features)
        if key == 'memory':
            if 'memory' not in features:
                return False
            return new is None or int(parse_memory(new)) >= STATIC_MEMORY
        return False


def disk_hotplugs(key, new, old, features):
    """Whether a running VM takes a disk change at once (qemu-server PVE/QemuServer.pm): never for efidisk0 and
    tpmstate0 (vmconfig_hotplug_pending); a new or removed disk only with hotplug ``disk`` and not on IDE or SATA
    (vmconfig_hotplug_pending's delete branch, vmconfig_update_disk's "hotplug new disks"); a disk keeping its volume
    unless one of COLD_DRIVE_PROPERTIES changes (vmconfig_update_disk: "skip non hotpluggable value"). CD-ROM changes
    are fakepve's own (a media swap applies at once)."""
    if key in ('efidisk0', 'tpmstate0') or any(value is not None and is_cdrom(*split_drive(value)) for value in (new, old)):
        return False
    if new is None or old is None:
        return 'disk' in features and not key.startswith(('ide', 'sata'))
    (old_volume, before), (new_volume, after) = split_drive(old), split_drive(new)
    if old_volume != new_volume:
        return False  # replacing a disk's volume: not something the collection does; left pending
    return not any(before.get(prop) != after.get(prop) for prop in COLD_DRIVE_PROPERTIES)


def hotplug_features(value):
    """qemu-server PVE/QemuServer.pm parse_hotplug_features: the features a hotplug value enables."""
    text = str(value)
    if text == '0':
        return set()
    return set(split_list(DEFAULT_HOTPLUG if text == '1' else text))


def parse_memory(value):
    """The MiB of a memory value, ``[current=]N`` (qemu-server PVE/QemuServer/Memory.pm parse_memory)."""
    for part in str(value).split(','):
        key, sep, val = part.partition('=')
        if not sep:
            return key
        if key == 'current':
            return val
    return STATIC_MEMORY


def net_properties(value):
    """A netN value's properties (qemu-server Network.pm parse_net): the ``MODEL=MAC`` part as model and macaddr."""
    props = {}
    for part in str(value).split(','):
        key, _sep, val = part.partition('=')
        if key in NET_MODELS:
            props['model'], props['macaddr'] = key, val.upper()
        elif part:
            props[key] = val
    return props
