"""A lab guest's commands run on this machine, so the files a guest OS owns are the guest's own: each command runs
in a private mount namespace where /etc/machine-id, /etc/ssh and /var/lib/dbus are the guest's copies under
HOME/.system. A golden-image bake's generalization (empty machine-id, no D-Bus id, no SSH host keys) then acts on
the guest, never on the machine the lab runs on, whatever pve_generalize_root says."""

import os
import shutil

SYSTEM_DIR = '.system'
# The guest's own files in place of the machine's: (path in the guest, initial content; None for a directory).
GUEST_FILES = (
    ('etc/machine-id', '{machine_id}\n'),
    ('etc/ssh', None),
    ('etc/ssh/ssh_host_ed25519_key', 'lab host key\n'),
    ('var/lib/dbus', None),
    ('var/lib/dbus/machine-id', '{machine_id}\n'),
)
CONFINED = ('/etc/machine-id', '/etc/ssh', '/var/lib/dbus')


def system_root(home, machine_id):
    """HOME/.system, made with the guest's machine id and host key the first time."""
    root = os.path.join(home, SYSTEM_DIR)
    if not os.path.isdir(root):
        for path, content in GUEST_FILES:
            target = os.path.join(root, path)
            os.makedirs(target if content is None else os.path.dirname(target), exist_ok=True)
            if content is not None:
                with open(target, 'w', encoding='ascii') as out:
                    out.write(content.format(machine_id=machine_id))
    return root


def confined(argv, home, machine_id):
    """argv run with the guest's system files bound over the machine's, in a mount namespace of its own.

    Needs unshare(1): as root a mount namespace, otherwise a user namespace with one too (unshare -r).
    """
    root = system_root(home, machine_id)
    binds = ' && '.join(f'mount --bind "$0{path}" {path}' for path in CONFINED if os.path.exists(path))
    unshare = [shutil.which('unshare') or 'unshare', '--mount', '--propagation', 'private']
    if os.geteuid() != 0:
        unshare.append('--map-root-user')
    return unshare + ['/bin/sh', '-c', '{0} && exec "$@"'.format(binds or 'true'), root] + list(argv)
