"""The embedded AWS of `agentfn run`, kept on disk: moto's server on loopback whose DynamoDB
and S3 writes are logged, so the runs table and the bucket outlive the process.

Where: `.agentfn/local/` beside the spec (git-ignored), or `$AGENTFN_STATE_DIR`.

How it is made durable: a write-ahead log of requests. Every DynamoDB or S3 request that
changes state and succeeds is appended to `aws.log` (one JSON line: method, path, query,
headers, body) before its answer goes back, so a run's commit that the engine saw succeed
survives the process (even kill -9); it reaches the disk within SYNC_SECONDS, or before
the answer with AGENTFN_LOCAL_SYNC=full (see SYNC_ENV). A writer that dies mid-append
leaves a torn last line, which the next reader cuts off (its request was never answered,
so nothing relied on it). A log past a few MB is compacted (infra.local.local_snapshot). At start,
and before every later DynamoDB/S3 request, the lines other processes appended since are
replayed into this process's moto, in order: moto answers the same requests the same way,
so every process holds the same table.

How concurrent processes stay consistent: each DynamoDB/S3 request runs under an exclusive
`flock` on `lock` (catch up, answer, append), so requests from several `agentfn run`
processes are applied one at a time, in the log's order, and a conditional write (the
store's version checks) sees every earlier write from any process. Step Functions,
EventBridge and Lambda are not logged: an execution lives in the process that started it.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from io import BytesIO
from pathlib import Path
from typing import Any

from infra.local.local_snapshot import body_field

STATE_DIR_ENV = "AGENTFN_STATE_DIR"
#: `full`: every logged write reaches the disk before it is answered (a machine crash loses
#: nothing; each write then waits for the disk, about 10 ms). Otherwise, as SQLite's WAL
#: with synchronous=NORMAL: every write is in the kernel before it is answered (a crash of
#: agentfn, even kill -9, loses nothing) and on the disk within SYNC_SECONDS.
SYNC_ENV = "AGENTFN_LOCAL_SYNC"
SYNC_SECONDS = 1.0
LOG_NAME = "aws.log"
HOST = "127.0.0.1"
_SERVICE = re.compile(r"Credential=[^/]*/[^/]*/[^/]*/([^/]+)/")
#: DynamoDB operations that change state (the rest only read).
_DYNAMODB_WRITES = frozenset(
    {
        "CreateTable",
        "UpdateTable",
        "DeleteTable",
        "UpdateTimeToLive",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
    }
)
#: Request headers kept with a logged request: what moto reads to answer it again.
_ENVIRON_KEYS = ("CONTENT_TYPE",)
#: Headers moto does not read (the SDK's bookkeeping): left out of the log.
_UNREAD_HEADERS = frozenset(
    {
        "HTTP_USER_AGENT",
        "HTTP_AMZ_SDK_INVOCATION_ID",
        "HTTP_AMZ_SDK_REQUEST",
        "HTTP_ACCEPT_ENCODING",
    }
)


def state_dir(spec_file: str | Path) -> Path:
    """Where `agentfn run` keeps the embedded AWS for this spec."""
    override = os.environ.get(STATE_DIR_ENV)
    if override:
        return Path(override).resolve()
    return Path(spec_file).resolve().parent / ".agentfn" / "local"


def reset(directory: Path) -> bool:
    """Forget every run kept in `directory` (under the lock, so no process is mid-write).
    False when there was nothing to clear."""
    log = directory / LOG_NAME
    if not log.exists():
        return False
    with _flocked(directory):
        log.unlink()
    for leftover in directory.iterdir():
        if leftover.name != "lock":
            if leftover.is_dir():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()
    return True


@contextmanager
def _flocked(directory: Path) -> Iterator[None]:
    with open(directory / "lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _mutates(service: str, environ: dict[str, Any]) -> bool:
    if service == "dynamodb":
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        return target.rpartition(".")[2] in _DYNAMODB_WRITES
    return environ.get("REQUEST_METHOD", "GET") in {"PUT", "POST", "DELETE"}


def _read_body(environ: dict[str, Any]) -> bytes:
    stream = environ.get("wsgi.input")
    if stream is None:
        return b""
    length = environ.get("CONTENT_LENGTH")
    if length:
        return bytes(stream.read(int(length)))
    if environ.get("wsgi.input_terminated"):  # chunked: werkzeug ends the stream itself
        return bytes(stream.read())
    return b""


class RequestLog:
    """moto's WSGI app behind the log: DynamoDB and S3 requests catch up with the log,
    are answered, and (writes that succeeded) are appended to it, under the file lock."""

    def __init__(self, app: Callable[..., Iterable[bytes]], directory: Path):
        self.app = app
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / LOG_NAME
        self._lock_file = open(directory / "lock", "a+")  # noqa: SIM115 - held for the process
        self._threads = threading.Lock()
        self._offset = 0
        self._inode: int | None = None  # the log file read so far (compaction replaces it)
        self._full_sync = os.environ.get(SYNC_ENV, "").lower() == "full"
        self._synced_at = time.monotonic()
        self._unsynced = False
        self.replayed = 0  # requests replayed from the log (other processes' and earlier ones)

    def close(self) -> None:
        self.sync()
        self._lock_file.close()

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._threads:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_file, fcntl.LOCK_UN)

    def catch_up(self) -> None:
        """Replay what was appended since this process last read the log (lock held)."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            if self._offset:  # `agentfn local reset` cleared it under a live process
                raise RuntimeError(f"{self.path} was cleared while this process used it") from None
            return
        size = status.st_size
        if self._inode is not None and status.st_ino != self._inode:
            from infra.local.local_snapshot import empty_backends

            empty_backends()  # another process compacted the log: start again from it
            self._offset = 0
        self._inode = status.st_ino
        if size < self._offset:
            raise RuntimeError(f"{self.path} shrank while this process used it")
        if size == self._offset:
            return
        with open(self.path, "rb") as log:
            log.seek(self._offset)
            data = log.read(size - self._offset)
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            self._replay(json.loads(line))
            self.replayed += 1
        self._offset += end
        if end < len(data):  # a torn last line: a writer died mid-append, unanswered
            with open(self.path, "r+b") as log:
                log.truncate(self._offset)

    def _replay(self, record: dict[str, Any]) -> None:
        body = record["text"].encode() if "text" in record else base64.b64decode(record["base64"])
        environ: dict[str, Any] = {
            "REQUEST_METHOD": record["method"],
            "PATH_INFO": record["path"],
            "QUERY_STRING": record["query"],
            "SERVER_NAME": HOST,
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "wsgi.url_scheme": "http",
            "wsgi.input": BytesIO(body),
            "wsgi.errors": BytesIO(),
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
            "wsgi.version": (1, 0),
            "CONTENT_LENGTH": str(len(body)),
            **record["headers"],
        }
        for _ in self.app(environ, lambda status, headers, exc_info=None: None):
            pass

    def compact_if_large(self) -> bool:
        """Rewrite a large log as a snapshot of what it built (lock held, caught up)."""
        from infra.local.local_snapshot import COMPACT_AFTER, write_snapshot

        if self._offset < COMPACT_AFTER:
            return False
        self._offset = write_snapshot(self.path)
        self._inode = os.stat(self.path).st_ino
        return True

    def _append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        if self._inode is None:
            self._inode = os.fstat(fd).st_ino
        try:
            os.write(fd, line)  # in the kernel before the answer: a crashed process loses nothing
            now = time.monotonic()
            if self._full_sync or now - self._synced_at >= SYNC_SECONDS:
                os.fdatasync(fd)  # on the disk: a crashed machine loses at most SYNC_SECONDS
                self._synced_at, self._unsynced = now, False
            else:
                self._unsynced = True
        finally:
            os.close(fd)
        self._offset += len(line)

    def sync(self) -> None:
        """Put what was appended since the last sync on the disk."""
        if self._unsynced and self.path.exists():
            fd = os.open(self.path, os.O_WRONLY)
            try:
                os.fdatasync(fd)
            finally:
                os.close(fd)
            self._unsynced = False

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        found = _SERVICE.search(environ.get("HTTP_AUTHORIZATION", ""))
        service = found.group(1) if found else ""
        if service not in {"dynamodb", "s3"}:
            return self.app(environ, start_response)
        body = _read_body(environ)
        environ["wsgi.input"] = BytesIO(body)
        environ["CONTENT_LENGTH"] = str(len(body))
        environ.pop("HTTP_TRANSFER_ENCODING", None)
        answered: list[Any] = []

        def capture(status: str, headers: Any, exc_info: Any = None) -> Any:
            answered.append(status)
            return start_response(status, headers, exc_info)

        with self.locked():
            self.catch_up()
            output = list(self.app(environ, capture))
            if _mutates(service, environ) and answered and answered[0][:1] == "2":
                headers = {
                    k: v
                    for k, v in environ.items()
                    if k.startswith("HTTP_") and k not in _UNREAD_HEADERS
                }
                headers.update({k: environ[k] for k in _ENVIRON_KEYS if k in environ})
                self._append(
                    {
                        "method": environ["REQUEST_METHOD"],
                        "path": environ.get("PATH_INFO", "/"),
                        "query": environ.get("QUERY_STRING", ""),
                        "headers": headers,
                        **body_field(body),
                    }
                )
        return output


class LocalAwsServer:
    """moto's server on loopback, in a thread, behind a RequestLog on `directory`."""

    def __init__(self, directory: Path):
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication as Application
        from moto.moto_server.werkzeug_app import MotoRequestHandler, create_backend_app
        from werkzeug.serving import make_server

        from infra.local import local_sfn
        from infra.local.dev_concurrency import serialized
        from infra.local.local_dynamodb import install
        from infra.local.local_dynamodb_answers import direct

        install()  # moto's DynamoDB without its table-wide copies (infra.local.local_dynamodb)
        local_sfn.install()  # its Step Functions without per-execution parses (local_sfn)
        import logging

        logging.getLogger("werkzeug").setLevel(logging.WARNING)
        self.log = RequestLog(serialized(direct(Application(create_backend_app))), directory)
        self.server = make_server(HOST, 0, self.log, True, request_handler=MotoRequestHandler)
        self.port = int(self.server.socket.getsockname()[1])
        self.url = f"http://{HOST}:{self.port}"
        # A short poll: `stop()` waits up to one interval for the loop to notice (0.5 s by
        # default, a third of a one-shot `agentfn run`); waking 20 times a second costs nothing.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._in_process: Callable[[], None] | None = None

    def start(self) -> None:
        from moto.core.config import default_user_config

        from infra.local.in_process import serve_in_process

        # Step Functions executions must really run; Lambda must not need Docker.
        default_user_config["lambda"] = {"use_docker": False}
        default_user_config["stepfunctions"] = {"execute_state_machine": True}
        with self.log.locked():
            self.log.catch_up()
            self.log.compact_if_large()
        self.thread.start()
        # This process's clients skip loopback HTTP (infra.local.in_process), as `agentfn
        # dev`'s do; other processes sharing the state still use it.
        self._in_process = serve_in_process(self.log, HOST, self.port)

    def stop(self) -> None:
        if self._in_process is not None:
            self._in_process()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
        self.log.close()
