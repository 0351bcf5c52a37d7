"""A node's config (/nodes/{node}/config) as pve-manager keeps it (PVE/NodeConfig.pm, PVE/API2/NodeConfig.pm):
the notes (`description`) and other options in /etc/pve/nodes/<node>/config, with the file's digest.

An empty (or missing) file has no digest: pve-manager PVE/NodeConfig.pm load_config answers `{}` for it
(`return {} if !$raw`; only parse_node_config sets {digest}), and pve-common src/PVE/Tools.pm assert_if_modified
checks a write's digest only when both digests are set, so a write to an empty file is never refused.

fakepve answers GET with a sample and stores nothing on PUT; the collection keeps pve_iso's record in the notes.
"""

from fakepve.routing import check_digest, sha1, split_list

CONFIG = '/nodes/{node}/config'


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
