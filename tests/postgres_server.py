"""A PostgreSQL server of a test module's (or a benchmark's) own: Debian's ``postgresql`` package
(``.ci/run`` installs it where it is missing), a cluster made by ``initdb`` in a temporary folder,
listening on a free loopback port, trusting local connections. PostgreSQL refuses to run as root,
so as root the server runs as the ``postgres`` user."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path



class Unavailable(RuntimeError):
    """PostgreSQL cannot be started here (not installed; root without a ``postgres`` user)."""


def postgres_bin() -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: on PATH, or in Debian's versioned folder."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).resolve().parent
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def server_or_skip() -> Iterator[tuple[str, int, str]]:
    """``postgres_server()`` for a test: skipped where PostgreSQL cannot be started."""
    import pytest

    with ExitStack() as stack:
        try:
            running = stack.enter_context(postgres_server())
        except Unavailable as err:
            pytest.skip(str(err))
        yield running


@contextmanager
def postgres_server() -> Iterator[tuple[str, int, str]]:
    """(host, port, user) of a running server; stopped and removed afterwards."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        raise Unavailable("PostgreSQL's initdb and pg_ctl are not installed (Debian: apt-get install postgresql)")
    as_user: list[str] = []
    folder = Path(tempfile.mkdtemp(prefix="panes-pg-"))
    if os.geteuid() == 0:  # the server refuses root
        try:
            postgres_user = pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root and there is no 'postgres' user to run the server as") from None
        os.chown(folder, postgres_user.pw_uid, postgres_user.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port, user = folder / "data", free_port(), "panes"

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, text=True, cwd=folder)

    run(str(bin_dir / "initdb"), "-D", str(data), "-U", user, "--auth=trust", "-E", "UTF8")
    run(str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "60",
        "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start")
    try:
        yield "127.0.0.1", port, user
    finally:
        run(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


def new_database(host: str, port: int, user: str, prefix: str) -> str:
    """A database of its own on the server (a unique name): tests of one server stay apart."""
    import time

    import psycopg2

    name = f"{prefix}_{time.time_ns()}"
    connection = psycopg2.connect(host=host, port=port, user=user, dbname="postgres")
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute(f'CREATE DATABASE "{name}"')
    finally:
        connection.close()
    return name
