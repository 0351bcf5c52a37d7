"""A node's config (/nodes/{node}/config) as pve-manager keeps it (PVE/NodeConfig.pm, PVE/API2/NodeConfig.pm):
the notes (`description`) and other options in /etc/pve/nodes/<node>/config, with the file's digest.

An empty (or missing) file has no digest: pve-manager PVE/NodeConfig.pm load_config answers `{}` for it
(`return {} if !$raw`; only parse_node_config sets {digest}), and pve-common src/PVE/Tools.pm assert_if_modified
checks a write's digest only when both digests are set, so a write to an empty file is never refused.

A write runs under the node's config lock (PVE/NodeConfig.pm lock_config: pve-common lock_file on
/var/lock/pvenode.lock, 10 s); reads take no lock. While another writer holds it (hold_node_config_lock), a write
waits up to those 10 PVE seconds and then fails with lock_file's "can't lock file ... - got timeout".

fakepve answers GET with a sample and stores nothing on PUT; the collection keeps pve_iso's record in the notes.
"""

import asyncio

from fakepve.routing import check_digest, die, sha1, split_list

CONFIG = '/nodes/{node}/config'
# PVE/NodeConfig.pm: $node_config_lock and lock_config's timeout.
LOCK_FILE = '/var/lock/pvenode.lock'
LOCK_SECS = 10


def _description_lines(description):
    """Perl's split(/\\n/, ...): the lines of the notes, trailing empty ones dropped."""
    lines = description.split('\n')
    while lines and lines[-1] == '':
        lines.pop()
    return lines


def read_description(lines):
    """JSONSchema::parse_config with a comment key: every comment line, trimmed at its end, then a newline."""
    return ''.join(line.rstrip() + '\n' for line in lines)


class NodeConfigMixin:
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # node -> {option: value}; the notes are kept as the comment lines write_node_config writes.
        self.node_configs = {}
        # node -> the event that ends another writer's hold of the node's config lock.
        self.node_config_locks = {}
        # node -> the users (API tokens) whose writes met that hold, for a test to tell who came.
        self.node_config_lock_met = {}

    def hold_node_config_lock(self, node):
        """Another writer holds node's config lock until release_node_config_lock(node)."""
        self.node_config_locks.setdefault(node, asyncio.Event())
        self.node_config_lock_met[node] = set()

    def release_node_config_lock(self, node):
        released = self.node_config_locks.pop(node, None)
        if released is not None:
            released.set()

    def node_config_file(self, node):
        """The config file's text as write_node_config writes it: the notes as # lines, then sorted options."""
        config = self.node_configs.get(node, {})
        text = ''.join(f'#{line}\n' for line in config.get('description', ()))
        return text + ''.join(f'{key}: {config[key]}\n' for key in sorted(config) if key != 'description')

    def node_config_digest(self, node):
        """The digest GET answers and PUT checks against: the file's sha1, None while the file is empty."""
        text = self.node_config_file(node)
        return sha1(text) if text else None

    def _routes_lab_node_config(self):
        return [('GET', CONFIG, self._lab_node_config_get), ('PUT', CONFIG, self._lab_node_config_put)]

    async def _lab_node_config_get(self, v, user):
        config = dict(self.node_configs.get(v['node'], {}))
        if 'description' in config:
            config['description'] = read_description(config['description'])
        wanted = v.get('property')
        if wanted:
            # Asked for one property, PVE answers with it alone (no digest), or with nothing.
            return {wanted: config[wanted]} if wanted in config else {}
        digest = self.node_config_digest(v['node'])
        if digest is not None:
            config['digest'] = digest
        return config

    async def _lab_node_config_put(self, v, user):
        node = v['node']
        held = self.node_config_locks.get(node)
        if held is not None:
            self.node_config_lock_met.setdefault(node, set()).add(user)
        if held is not None and self.time_scale:
            try:
                await asyncio.wait_for(held.wait(), LOCK_SECS * self.time_scale)
            except TimeoutError:
                pass
        if node in self.node_config_locks:
            raise die(f"can't lock file '{LOCK_FILE}' - got timeout")
        check_digest(self.node_config_digest(node), v.get('digest'))
        config = self.node_configs.setdefault(node, {})
        for key, value in v.items():
            if key in ('node', 'digest', 'delete'):
                continue
            config[key] = _description_lines(value) if key == 'description' else value
        for key in split_list(v.get('delete')):
            config.pop(key, None)
        if not config.get('description', True):
            # An empty description writes no comment line, so it reads back as absent.
            del config['description']
        return None
