"""The progress lines of long tasks' logs, as PVE writes them, while the lab's time passes.

- download-url: PVE::Tools::download_file_from_url (pve-common src/PVE/Tools.pm) prints ``downloading URL to PATH`` and
  runs ``wget --progress=dot:giga``, whose dot progress (GNU wget src/progress.c: dot_set_params for giga, dot_draw,
  print_row_stats) writes one row per 32 MiB: the KiB at the row's start (%6s), four clusters of eight dots (1 MiB
  each), the percentage (%3d, rounded down), the row's rate (%4.*f with a unit of ' ', K, M, G per second) and the time
  left; the last row pads its missing dots and ends in ``=`` and the total time.
- A full clone: PVE::QemuServer::clone_disk (qemu-server src/PVE/QemuServer.pm) prints ``create full clone of drive
  NAME (VOLID)``, then PVE::QemuServer::QemuImage::convert prints ``transferred X of Y (P%)`` for every progress line
  of ``qemu-img convert -p`` (every percent, two decimals), the sizes by PVE::Format::render_bytes with one decimal.
  A linked clone prints ``create linked clone of drive ...`` and copies nothing.

The lab's files are small, so a download's rows are those of ``download_bytes`` (the size the lab's wget pretends a
file has) spread over the download's PVE seconds. Rows are written as the lab's time passes: at time scale 0 a task
ends before its UPID is answered, and the lab writes none.
"""

import math

WGET_DOT = 1 << 20
WGET_ROW_DOTS = 32
WGET_CLUSTER = 8
ROW_BYTES = WGET_DOT * WGET_ROW_DOTS
UNITS = ('B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB')


def render_bytes(value, precision=1):
    """PVE::Format::render_bytes (pve-common src/PVE/Format.pm)."""
    unit = 0
    if value > 1023:
        unit = int(math.log(value) / math.log(1024))
        value = value / 1024**unit
    return '%.*f %s' % (precision, value, UNITS[unit])


def wget_rate(bytes_per_sec):
    """wget's calc_rate and print_row_stats: the rate in the largest unit of ' ', K, M, G it reaches (by 1024)."""
    unit = 0
    while bytes_per_sec >= 1024 and unit < 3:
        bytes_per_sec /= 1024.0
        unit += 1
    digits = 0 if bytes_per_sec >= 99.95 else 1 if bytes_per_sec >= 9.995 else 2
    return '%4.*f%s' % (digits, bytes_per_sec, ' KMG'[unit])


def wget_eta(seconds):
    """wget's eta_to_human_short, for the times the lab's downloads take."""
    seconds = int(seconds + 0.5)
    if seconds < 100:
        return '%ds' % seconds
    if seconds < 100 * 60:
        return '%dm%ds' % divmod(seconds, 60)
    return '%dh%dm' % (seconds // 3600, seconds % 3600 // 60)


def wget_row(row, dots, stats):
    """One row: the KiB before it, its dots (a blank before each cluster), padded to a full row (dot_finish)."""
    text = ''.join((' ' if d % WGET_CLUSTER == 0 else '') + '.' for d in range(dots))
    text += ''.join((' ' if i % WGET_CLUSTER == 0 else '') + ' ' for i in range(dots, WGET_ROW_DOTS))
    return '%6sK%s%s' % (row * ROW_BYTES // 1024, text.rstrip() if dots == WGET_ROW_DOTS else text, stats)


def wget_rows(total, secs):
    """Every row wget --progress=dot:giga writes for a download of total bytes taking secs: (PVE second, row).

    dot_draw writes each full row with its stats as it fills; dot_finish then writes the last row, the dots of what
    is left (an empty row when the file ends on a row's end), padded, with 100%, its rate and = the total time."""
    per_sec = total / float(secs) if secs else float(total)
    rows, done = [], 0
    while total - done >= ROW_BYTES:
        done += ROW_BYTES
        left = (total - done) / per_sec
        rows.append((done / per_sec, wget_row(len(rows), WGET_ROW_DOTS, '%3d%% %s %s' % (int(100.0 * done / total), wget_rate(per_sec), wget_eta(left)))))
    rest = total - done
    took = total / per_sec
    rows.append(
        (
            took,
            wget_row(len(rows), rest // WGET_DOT, '%3d%% %s=%s' % (100, wget_rate(per_sec if rest else 0), ('%.1fs' % took) if took < 10 else wget_eta(took))),
        )
    )
    return rows


def convert_rows(size):
    """The lines QemuImage::convert prints for a disk of size bytes: one per percent of qemu-img's progress."""
    return ['transferred %s of %s (%.2f%%)' % (render_bytes(int(size * p / 100.0)), render_bytes(size), p) for p in range(1, 101)]


async def write_rows(pve, log_ref, secs, rows):
    """Append rows (texts) to the task log in log_ref['log'] evenly over secs PVE seconds, as time passes."""
    step = secs / float(len(rows)) if rows else secs
    for text in rows:
        await pve.pause(step)
        if 'log' in log_ref:
            log_ref['log'].append(text)
    if not rows:
        await pve.pause(secs)
