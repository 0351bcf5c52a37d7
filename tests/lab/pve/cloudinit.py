"""Cloud-init facts PVE's code relies on: which config keys are cloud-init's, which drive is the
cloud-init drive, and the record of changes not yet on the drive (the config's ``[special:cloudinit]`` section)."""

import re

from fakepve.qemu import DRIVE_KEY, split_drive

# qemu-server's cloud-init options (PVE::QemuServer cloudinit_config_properties) besides ipconfigN.
CLOUDINIT_KEYS = ('cicustom', 'cipassword', 'citype', 'ciupgrade', 'ciuser', 'nameserver', 'searchdomain', 'sshkeys')
# qemu-server PVE/API2/Qemu.pm, $cloudinitoptions: the only keys cloudinit_pending (GET .../cloudinit) lists with
# their old and new value; ipconfigN, name and netN are not among them (since qemu-server commit 3a704639).
PENDING_LISTED_KEYS = ('cicustom', 'cipassword', 'citype', 'ciupgrade', 'ciuser', 'nameserver', 'searchdomain', 'sshkeys')
# PVE::QemuServer::Drive::drive_is_cloudinit: PVE recognises the drive by its volume name.
CLOUDINIT_VOLUME = re.compile(r'[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow2|vmdk))?$')
# PVE::QemuServer::Cloudinit::CLOUDINIT_DISK_SIZE
CLOUDINIT_SIZE = 4 * 1024**2


def is_cloudinit_key(key):
    return key in CLOUDINIT_KEYS or re.fullmatch(r'ipconfig\d+', key) is not None


def drive_is_cloudinit(value):
    return CLOUDINIT_VOLUME.search(split_drive(value)[0]) is not None


def cloudinit_drive_key(config):
    """The config key of the cloud-init drive, or None."""
    for key in sorted(config):
        if DRIVE_KEY.match(key) and config[key] is not None and drive_is_cloudinit(config[key]):
            return key
    return None


def cloudinit_values(config):
    """The cloud-init options of a config: what a generated cloud-init drive holds."""
    return {key: value for key, value in config.items() if is_cloudinit_key(key)}


def is_recorded_key(key):
    """qemu-server PVE/QemuServer.pm cloudinit_pending_properties: the keys whose changes on a running VM are recorded
    in the ``[special:cloudinit]`` section: every cloud-init option (ipconfigN included), ``name`` and ``netN``."""
    return is_cloudinit_key(key) or key == 'name' or re.fullmatch(r'net\d+', key) is not None


def record_change(record, key, old, new):
    """qemu-server PVE/QemuServer.pm vmconfig_hotplug_pending, $cloudinit_record_changed: note in ``record`` (the
    special section: key -> the value the drive holds, and ``added``, the keys the drive lacks) a change of ``key``
    from ``old`` to ``new`` (None: absent) applied to a running VM's config."""
    if not is_recorded_key(key):
        return
    recorded = record.get(key)
    added = set(split_added(record.pop('added', None)))
    if new is not None:
        if recorded is not None:
            if str(new) == str(recorded):  # reverted to what the drive holds
                record.pop(key, None)
                added.discard(key)
        elif key in added:
            pass
        elif old is not None:
            record[key] = old
        else:
            added.add(key)
    elif old is not None and recorded is None:
        if key in added:
            added.discard(key)
        else:
            record[key] = old
    if added:
        record['added'] = ','.join(sorted(added))


def split_added(text):
    return [key for key in re.split(r'[,;\s]+', str(text or '')) if key]


def cloudinit_pending(config, record, mask):
    """qemu-server PVE/API2/Qemu.pm cloudinit_pending (GET .../cloudinit), from the config and its special section:
    the added keys with their new value; each of $cloudinitoptions set in the config, with the recorded old value
    and the new one when recorded, else its value; every recorded key no longer set, as deleted. A modified
    ipconfigN, name or netN is therefore never listed."""
    config = dict(config)
    ci = dict(record)
    for values in (config, ci):
        if 'cipassword' in values:
            values['cipassword'] = mask
    added = ci.pop('added', None) or ''
    out = [{'key': key, 'pending': config.get(key)} for key in split_added(added)]
    for key in PENDING_LISTED_KEYS:
        if not config.get(key) or key in added:  # PVE tests "$added =~ m/$opt/"
            continue
        item = {'key': key}
        if ci.get(key):
            item.update(value=ci[key], pending=config[key])
        else:
            item['value'] = config[key]
        out.append(item)
    out.extend({'key': key, 'delete': 1} for key in ci if not config.get(key))
    return out
