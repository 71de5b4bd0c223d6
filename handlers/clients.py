"""AWS clients made when first used, not when the function starts.

A boto3 client costs 15-90 ms to make (the first one loads botocore's endpoint data), and a
step uses few of them: DynamoDB always, EventBridge when the run pauses or ends, Step
Functions, Lambda and S3 only for what the step does (a child run, an inline start, a large
body). Each LazyClient makes its client on the first attribute read, once, and is that
client from then on.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_lock = threading.Lock()  # boto3's default session is not thread-safe: make one at a time
_every: weakref.WeakSet[LazyClient] = weakref.WeakSet()  # for drop_all (handlers.snapshot)


class LazyClient:
    def __init__(self, service: str, **options: Any):
        self.service = service
        self._options = options
        self._client: Any = None
        _every.add(self)

    def __getattr__(self, name: str) -> Any:  # anything but `service`, `_options`, `_client`
        client = self._client
        if client is None:
            with _lock:
                if self._client is None:
                    import boto3

                    self._client = boto3.client(self.service, **self._options)
                client = self._client
        return getattr(client, name)

    @property
    def made(self) -> bool:
        """Whether the client exists yet (for tests and benchmarks)."""
        return self._client is not None


def drop_all() -> None:
    """Forget every client made (its connections and the credentials it signed with) and
    the credentials boto3's default session resolved: the next use makes a client again,
    in a few milliseconds (the session keeps botocore's loaded service data), with
    credentials and sockets of its own. For a function restored from a snapshot
    (handlers.snapshot). botocore has no public way to forget a session's credentials;
    `_credentials` is where `Session.get_credentials` caches them."""
    import boto3

    with _lock:
        for client in list(_every):
            client._client = None
        if boto3.DEFAULT_SESSION is not None:
            boto3.DEFAULT_SESSION._session._credentials = None
