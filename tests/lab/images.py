"""Small real disk and ISO images and a container template for the served-files registry, and reading a qcow2's virtual size."""

import functools
import gzip
import io
import struct
import tarfile

import pycdlib
import zstandard

GIB = 1024**3
QCOW2_MAGIC = b'QFI\xfb'
CLUSTER_BITS = 16
CLUSTER = 1 << CLUSTER_BITS
# The Debian 12 container template of PVE's appliance index (pveam available), as `make lab` serves it.
CONTAINER_TEMPLATE = 'debian-12-standard_12.7-1_amd64.tar.zst'
UBUNTU_CONTAINER_TEMPLATE = 'ubuntu-24.04-standard_24.04-2_amd64.tar.zst'
# The OS templates of the lab's appliance index (pve/aplinfo.py): file name -> (package, version, OS, headline), as
# pve-manager's aplinfo/aplinfo.dat records them.
OS_TEMPLATES = {
    CONTAINER_TEMPLATE: ('debian-12-standard', '12.7-1', 'debian-12', 'Debian 12 Bookworm (standard)'),
    UBUNTU_CONTAINER_TEMPLATE: ('ubuntu-24.04-standard', '24.04-2', 'ubuntu-24.04', 'Ubuntu 24.04 Noble (standard)'),
}


def qcow2(virtual_size):
    """An empty qcow2 (v3) image of virtual_size bytes, laid out as `qemu-img create -f qcow2` does:
    header, refcount table, one refcount block and the L1 table, one 64 KiB cluster each."""
    l2_span = CLUSTER * (CLUSTER // 8)  # bytes one L2 table maps
    l1_size = -(-virtual_size // l2_span)
    refcount_table, refcount_block, l1_table = CLUSTER, 2 * CLUSTER, 3 * CLUSTER
    header = struct.pack(
        '>4sIQIIQIIQQIIQQQQII', QCOW2_MAGIC, 3, 0, 0, CLUSTER_BITS, virtual_size, 0, l1_size, l1_table, refcount_table, 1, 0, 0, 0, 0, 0, 4, 104
    )
    image = bytearray(4 * CLUSTER)
    image[: len(header)] = header  # followed by the end-of-extensions marker: 8 zero bytes
    struct.pack_into('>Q', image, refcount_table, refcount_block)
    struct.pack_into('>4H', image, refcount_block, 1, 1, 1, 1)  # the four clusters in use
    return bytes(image)


def qcow2_virtual_size(data):
    """The virtual size of a qcow2 image, or None if data is not one."""
    if len(data) < 32 or data[:4] != QCOW2_MAGIC:
        return None
    return struct.unpack_from('>Q', data, 24)[0]


def iso(volume_id, files):
    """An ISO 9660 image (Joliet and Rock Ridge) holding files {name: bytes}."""
    image = pycdlib.PyCdlib()
    image.new(interchange_level=3, joliet=3, rock_ridge='1.09', vol_ident=volume_id)
    for name, data in sorted(files.items()):
        image.add_fp(io.BytesIO(data), len(data), f'/{name.upper()[:8]};1', rr_name=name, joliet_path='/' + name)
    out = io.BytesIO()
    image.write_fp(out)
    image.close()
    return out.getvalue()


def container_template(files):
    """A container template: a zstd-compressed tar of the root file system holding files {path: bytes}, laid out as
    PVE's templates are (paths under ./, as pve-container's Create.pm restore_archive unpacks them)."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode='w', format=tarfile.GNU_FORMAT) as archive:
        for path, data in sorted(files.items()):
            info = tarfile.TarInfo('./' + path.lstrip('/'))
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            archive.addfile(info, io.BytesIO(data))
    return zstandard.ZstdCompressor(level=3).compress(raw.getvalue())


@functools.cache
def debian_template():
    return container_template(
        {
            'etc/os-release': b'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\nVERSION_ID="12"\n',
            'etc/debian_version': b'12.7\n',
            'etc/hostname': b'localhost\n',
        }
    )


@functools.cache
def ubuntu_template():
    return container_template(
        {
            'etc/os-release': b'PRETTY_NAME="Ubuntu 24.04 LTS"\nID=ubuntu\nVERSION_ID="24.04"\n',
            'etc/hostname': b'localhost\n',
        }
    )


@functools.cache
def seed_files():
    """The files every lab serves from the start: {name: bytes}. Built once per process."""
    tools = iso('LABTOOLS', {'readme.txt': b'puls.proxmox lab: a small real ISO image.\n'})
    return {
        # Ubuntu's cloud image is a qcow2 despite its .img name (import it as .qcow2).
        'noble-server-cloudimg-amd64.img': qcow2(3584 * 1024**2),
        'debian-12-genericcloud-amd64.qcow2': qcow2(3 * GIB),
        'lab-tools.iso': tools,
        'lab-tools.iso.gz': gzip.compress(tools, mtime=0),
        CONTAINER_TEMPLATE: debian_template(),
        UBUNTU_CONTAINER_TEMPLATE: ubuntu_template(),
    }
