"""A real one-node SLURM cluster on 127.0.0.1 for tests: munged, slurmctld and slurmd from the
Debian packages (.ci/install-slurm.sh), every file in one private directory.

Nothing system-wide is used or touched: munge runs on its own key and socket, SLURM on its own
slurm.conf (clients find it through SLURM_CONF in `env`) and free ports, so it never meets a
system cluster. Daemons are stopped by the PIDs they wrote, never by name.

One wrinkle: inside a job, snakemake-executor-plugin-slurm-jobstep (0.6) strips every SLURM_*
variable, SLURM_CONF included, before its nested `srun`; a real cluster's srun then reads
/etc/slurm/slurm.conf, ours would find nothing. `env` therefore puts a tiny `srun` wrapper that
sets SLURM_CONF first on PATH (PATH reaches the job through sbatch --export=ALL).
"""
from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

DAEMONS = {"munged": "/usr/sbin/munged", "slurmctld": "/usr/sbin/slurmctld",
           "slurmd": "/usr/sbin/slurmd"}
CLIENTS = ("sbatch", "squeue", "sinfo", "scontrol", "scancel", "srun")

SLURM_CONF = """\
ClusterName=ctlocal
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=2
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def missing_binaries() -> list[str]:
    """Names of the daemons and client commands that are not installed."""
    missing = [name for name, path in DAEMONS.items() if not os.access(path, os.X_OK)]
    return missing + [c for c in CLIENTS if shutil.which(c) is None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024
    return 4000


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie still answers kill(0); it is gone for our purpose
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ", 1)[-1].startswith("Z"))


class OneNodeCluster:
    """`with OneNodeCluster(dir) as c: subprocess.run([...], env=c.env)`; stop() is idempotent."""

    def __init__(self, root: Path, cpus: int | None = None, memory_mb: int | None = None):
        self.root = Path(root)
        self.cpus = cpus or os.cpu_count() or 1
        # leave headroom for the machine itself; slurmd drains a node that claims too much
        self.memory_mb = memory_mb or max(1000, int(_memory_mb() * 0.8))
        self.conf = self.root / "slurm.conf"
        self.munge_socket = self.root / "munge" / "munge.socket"
        self.pids: dict[str, int] = {}
        self.bin = self.root / "bin"
        self.env = dict(os.environ, SLURM_CONF=str(self.conf),
                        PATH=f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}")
        self.env.pop("SLURM_JOB_ID", None)

    # ---- start ---------------------------------------------------------------------------
    def start(self, timeout: float = 90) -> "OneNodeCluster":
        for sub in ("state", "spool", "log", "munge"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        os.chmod(self.root / "munge", 0o700)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        self.bin.mkdir(exist_ok=True)
        wrapper = self.bin / "srun"
        srun = shutil.which("srun")
        wrapper.write_text(f'#!/bin/sh\nSLURM_CONF="{self.conf}" exec {srun} "$@"\n')
        wrapper.chmod(0o755)
        self.conf.write_text(SLURM_CONF.format(
            root=self.root, munge_socket=self.munge_socket, ctld_port=_free_port(),
            slurmd_port=_free_port(), cpus=self.cpus, memory_mb=self.memory_mb))
        try:
            self._daemon("munged", [
                DAEMONS["munged"], "--force", f"--socket={self.munge_socket}",
                f"--key-file={key}", f"--pid-file={self.root / 'munge' / 'munged.pid'}",
                f"--log-file={self.root / 'log' / 'munged.log'}",
                f"--seed-file={self.root / 'munge' / 'munged.seed'}"],
                self.root / "munge" / "munged.pid")
            self._daemon("slurmctld", [DAEMONS["slurmctld"], "-f", str(self.conf)],
                         self.root / "slurmctld.pid")
            self._daemon("slurmd", [DAEMONS["slurmd"], "-N", "localhost", "-f", str(self.conf)],
                         self.root / "slurmd.pid")
            self._wait_idle(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _daemon(self, name: str, argv: list[str], pid_file: Path, timeout: float = 20) -> None:
        """Start a self-daemonising program and record the PID it writes."""
        run = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout)
        if run.returncode != 0:
            raise RuntimeError(f"{name} did not start (exit {run.returncode}): "
                               f"{(run.stderr or run.stdout).strip()[-2000:]}\n{self.logs()}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                pid = int(pid_file.read_text().strip())
            except (OSError, ValueError):
                pid = 0
            if pid and _alive(pid):
                self.pids[name] = pid
                return
            time.sleep(0.2)
        raise RuntimeError(f"{name} wrote no live PID to {pid_file}\n{self.logs()}")

    def _wait_idle(self, timeout: float) -> None:
        deadline, state = time.monotonic() + timeout, ""
        while time.monotonic() < deadline:
            out = self.run("sinfo", "--noheader", "--format=%t", check=False)
            state = out.stdout.strip()
            if state in ("idle", "mix", "alloc"):
                return
            if state.startswith(("drain", "down", "inval")) and "*" not in state:
                # ReturnToService=2 brings a node back once slurmd registers; nudge it
                self.run("scontrol", "update", "nodename=localhost", "state=resume", check=False)
            time.sleep(1)
        raise RuntimeError(f"the node did not become idle (state {state!r})\n{self.logs()}")

    # ---- use -----------------------------------------------------------------------------
    def run(self, *argv: str, check: bool = True, timeout: float = 30
            ) -> subprocess.CompletedProcess:
        """A SLURM client command against this cluster."""
        return subprocess.run(list(argv), env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=check)

    def jobs(self) -> dict[str, str]:
        """Job id -> state for every job this cluster still lists (MinJobAge keeps 10 min)."""
        out = self.run("squeue", "--states=all", "--noheader", "--format=%i|%T", check=False)
        return dict(line.split("|", 1) for line in out.stdout.split() if "|" in line)

    def logs(self, tail: int = 30) -> str:
        parts = []
        for f in sorted((self.root / "log").glob("*.log")):
            lines = f.read_text(errors="replace").splitlines()[-tail:]
            parts.append(f"--- {f.name}\n" + "\n".join(lines))
        return "\n".join(parts)

    # ---- stop ----------------------------------------------------------------------------
    def stop(self) -> None:
        """Cancel what still runs, then stop each daemon we started, by its PID."""
        if "slurmctld" in self.pids and _alive(self.pids["slurmctld"]):
            try:
                self.run("scancel", "--user", str(os.getuid()), check=False, timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for name in ("slurmd", "slurmctld", "munged"):
            pid = self.pids.pop(name, None)
            if pid is None or not _alive(pid):
                continue
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 15
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.2)
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> "OneNodeCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
