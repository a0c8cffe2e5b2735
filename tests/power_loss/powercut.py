"""What the power-loss runs share (``run``: plain produce; ``txn_run``: transactions): powerfs, the
FUSE file system that keeps everything not yet fsynced in memory until the power is cut, and the
``pulsar-rs standalone`` broker started on it and killed.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pulsar

REPO = Path(__file__).resolve().parents[2]
POWERFS_CONTROL = ".powerfs"


class HarnessError(Exception):
    """The harness could not run a round (mount, broker start): not a durability result."""


def log(msg: str) -> None:
    print(msg, flush=True)


def powerfs_binary() -> Path:
    """The powerfs binary: $POWERFS_BIN, or built (no-op when fresh) in the cargo target dir."""
    if os.environ.get("POWERFS_BIN"):
        return Path(os.environ["POWERFS_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    binary = target / "release" / "pulsar-rs-powerfs"
    build = ["cargo", "build", "--release", "--quiet", "-p", "pulsar-rs-powerfs"]
    res = subprocess.run(build, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0 and not binary.exists():
        raise HarnessError(f"building powerfs failed:\n{res.stderr}")
    return binary


def broker_command() -> list[str]:
    """The installed ``pulsar-rs`` script of this interpreter's environment."""
    beside = Path(sys.executable).parent / "pulsar-rs"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("pulsar-rs")
    return [found] if found else [sys.executable, "-m", "pulsar_rs.cli"]


class Mount:
    """One mount of powerfs over ``backing`` at ``mountpoint``."""

    def __init__(self, binary: Path, backing: Path, mountpoint: Path) -> None:
        self.mountpoint = mountpoint
        self.proc = subprocess.Popen(
            [str(binary), "--backing", str(backing), str(mountpoint)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("MOUNTED"):
            err = self.proc.stderr.read() if self.proc.stderr else ""
            raise HarnessError(f"powerfs did not mount: {line}{err}")

    def cut(self) -> None:
        """Cuts the power; returns once nothing more can become durable."""
        with open(self.mountpoint / POWERFS_CONTROL, "w") as f:
            f.write("cut\n")

    def status(self) -> str:
        return (self.mountpoint / POWERFS_CONTROL).read_text().strip()

    def unmount(self) -> None:
        for _ in range(50):
            if subprocess.run(["fusermount3", "-u", str(self.mountpoint)], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)  # retry: the FUSE filesystem may still be busy
        else:
            subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Broker:
    """``pulsar-rs standalone`` on ephemeral ports with its data directory on the mount."""

    def __init__(self, data_dir: Path, config: Path, log_path: Path) -> None:
        self.log_path = log_path
        self.log = open(log_path, "a")  # noqa: SIM115 (closed in stop/kill)
        cmd = [*broker_command(), "standalone", "--config", str(config), "--data-dir", str(data_dir)]
        cmd += ["--port", "0", "--admin-port", "0"]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("READY"):
            self.proc.wait(timeout=10)
            self.log.close()
            tail = log_path.read_text()[-3000:]
            raise HarnessError(f"broker did not start (exit {self.proc.returncode}):\n{tail}")
        self.service_url = line.split()[1]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def new_client(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def durable_image(backing: Path) -> str:
    """The backing directory (what survived), for the diagnosis of a loss."""
    lines = []
    for p in sorted(backing.rglob("*")):
        rel = p.relative_to(backing)
        lines.append(f"    {rel}/" if p.is_dir() else f"    {rel} ({p.stat().st_size} bytes)")
    return "\n".join(lines) or "    (empty)"
