"""Cloud-init facts PVE's code relies on: which config keys are cloud-init's, and which drive is the
cloud-init drive."""

import re

from fakepve.qemu import DRIVE_KEY, split_drive

# qemu-server's cloud-init options (PVE::QemuServer cloudinit_config_properties) besides ipconfigN.
CLOUDINIT_KEYS = ('cicustom', 'cipassword', 'citype', 'ciupgrade', 'ciuser', 'nameserver', 'searchdomain',
                  'sshkeys')
# PVE::QemuServer::Drive::drive_is_cloudinit: PVE recognises the drive by its volume name.
CLOUDINIT_VOLUME = re.compile(r'[:/](?:vm-\d+-)?cloudinit(?:\.(?:raw|qcow2|vmdk))?$')
# PVE::QemuServer::Cloudinit::CLOUDINIT_DISK_SIZE
CLOUDINIT_SIZE = 4 * 1024 ** 2


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
    return dict((key, value) for key, value in config.items() if is_cloudinit_key(key))
