"""Who holds a lock file: the nightly's catalog lock and the catalog's upgrade lock both ask here."""

from __future__ import annotations

import os
import re
from pathlib import Path


def lock_holder(path: Path, recorded: str) -> str:
    """Who really holds the lock: the PID written in the file only while that process is alive and has
    the file open; else the processes that have it open (a child that inherited the lock outlives the PID
    written by its parent), found in /proc/*/fd on Linux."""
    pids = _openers(path)
    m = re.match(r"pid (\d+)", recorded)
    if m and (_alive(int(m.group(1))) if pids is None else int(m.group(1)) in pids):
        return recorded
    if pids:
        return ", ".join(f"pid {p}" for p in sorted(pids)) + (f"; the file still says {recorded!r}" if recorded else "")
    return recorded or "unknown holder"


def _openers(path: Path) -> set[int] | None:
    """PIDs with ``path`` open (None where /proc cannot tell)."""
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return None
    target = str(path.resolve())
    found = set()
    for fd_dir in proc.glob("[0-9]*/fd"):
        try:
            for fd in fd_dir.iterdir():
                if os.readlink(fd) == target:
                    found.add(int(fd_dir.parent.name))
                    break
        except OSError:  # gone meanwhile, or not ours to read
            continue
    found.discard(os.getpid())
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
