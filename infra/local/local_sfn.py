"""moto's Step Functions interpreter without the work it repeats for every execution (local
only: the embedded AWS and `agentfn dev`).

Profiled with 10 demo `support` team runs started at once on `agentfn dev` (bench/
dev_teams.py --profile), the server spent a third of its CPU parsing state machines and a
tenth building boto3 clients, none of it in agentfn's own code: for every execution moto
parses the definition again with ANTLR (its Python runtime, about 50 ms for an agent's
state machine), for every Lambda task it builds a new boto3 client (botocore copies its
event hooks each time), and for every JSONPath it evaluates it builds a new JSONPath parser
(PLY's tables). One process serves everything (moto's server, the API, every agent's
function), so that CPU is what made a team run's latency grow with the runs at once.

- The program of a definition (moto's evaluation components, from its parse tree) is kept
  by the definition's text and shared by its executions, as the service shares one state
  machine version. Components keep nothing of an execution: an execution's state lives in
  its own environment (its heap, context and event history); the one thing a component
  writes on itself, the key of its slot in those heaps (`heap_key`), is made here once
  and atomically instead of lazily, so that two executions starting together cannot each
  draw a different key. A definition that fails to parse is not kept (it fails the same
  way each time).
- moto's server looks the backend of each request up by its host, listing its service
  modules on disk and trying some 200 URL patterns, and lists a response class's methods
  (inspect.getmembers) to find the action's: both answers are kept (by host, by class).
- One boto3 client per (region, service, endpoint), as a Lambda function would keep one:
  boto3 clients are safe to share between threads. Its pool holds as many connections as
  the embedded AWS serves at once, so concurrent tasks do not queue for a connection.
- A parsed JSONPath is kept by its text (jsonpath_ng's expressions are not changed by a
  `find`).

`install()` is idempotent and lasts for the process, like infra.local.local_dynamodb's.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

#: Programs kept (one per state machine definition; a project has a handful).
PROGRAMS_KEPT = 256
#: Where EvalComponent keeps its heap key (a name-mangled private attribute).
_HEAP_KEY = "_EvalComponent__heap_key"
#: Connections each shared client may keep open to the embedded AWS.
POOL_CONNECTIONS = 128

_installed = False
_lock = threading.Lock()
_programs: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
_clients: dict[tuple[str, str, str | None], Any] = {}


def install() -> None:
    """Patch moto's parser, client factory and JSONPath parsing (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        from infra.local import moto_imports

        moto_imports.defer()  # before the interpreter imports its Batch integration
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication
        from moto.stepfunctions.parser.asl.component.common.path import result_path
        from moto.stepfunctions.parser.asl.component.eval_component import EvalComponent
        from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser
        from moto.stepfunctions.parser.asl.utils import boto_client, json_path

        AmazonStateLanguageParser.parse = staticmethod(parse)  # type: ignore[method-assign]
        EvalComponent.heap_key = property(heap_key)  # type: ignore[assignment,method-assign]
        from moto.core import responses

        responses.method_names_from_class = functools.cache(responses.method_names_from_class)
        backend_for = DomainDispatcherApplication.get_backend_for_host
        DomainDispatcherApplication.get_backend_for_host = _remembered(backend_for)  # type: ignore[method-assign,assignment]
        json_path.parse = functools.lru_cache(maxsize=4096)(json_path.parse)
        result_path.parse = functools.lru_cache(maxsize=4096)(result_path.parse)
        original = boto_client.boto_client_for
        boto_client.boto_client_for = shared_client
        for name, module in list(sys.modules.items()):  # those that imported the name
            if name.startswith("moto.stepfunctions.") and (
                getattr(module, "boto_client_for", None) is original
            ):
                module.boto_client_for = shared_client  # type: ignore[attr-defined]
        _installed = True


def parse(definition: str) -> tuple[Any, Any]:
    """AmazonStateLanguageParser.parse, kept by definition: (its program, its parse tree)."""
    from moto.stepfunctions.parser.asl.parse.preprocessor import Preprocessor

    with _lock:
        parsed = _programs.get(definition)
        if parsed is not None:
            _programs.move_to_end(definition)
            return parsed
    tree = _parse_tree(definition)
    parsed = (Preprocessor().visit(tree), tree)
    with _lock:
        parsed = _programs.setdefault(definition, parsed)
        while len(_programs) > PROGRAMS_KEPT:
            _programs.popitem(last=False)
    return parsed


def heap_key(component: Any) -> str:
    """EvalComponent.heap_key, drawn once per component (dict.setdefault is atomic)."""
    from moto.stepfunctions.parser.utils import long_uid

    found: str | None = component.__dict__.get(_HEAP_KEY)
    return found if found is not None else component.__dict__.setdefault(_HEAP_KEY, long_uid())


def _remembered(lookup: Callable[[Any, str | None], Any]) -> Callable[[Any, str | None], Any]:
    """DomainDispatcherApplication.get_backend_for_host, its answers kept by host (they
    depend on the host alone: moto's backend modules and URL patterns are fixed)."""
    answers: dict[str | None, Any] = {}

    def get_backend_for_host(self: Any, host: str | None) -> Any:
        if host not in answers:
            answers[host] = lookup(self, host)
        return answers[host]

    return get_backend_for_host


def _parse_tree(definition: str) -> Any:
    """moto's own parse (asl_parser.AmazonStateLanguageParser.parse), the tree only."""
    from antlr4 import CommonTokenStream, InputStream
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLLexer import ASLLexer
    from moto.stepfunctions.parser.asl.antlr.runtime.ASLParser import ASLParser
    from moto.stepfunctions.parser.asl.parse.asl_parser import (
        ASLParserException,
        SyntaxErrorListener,
    )

    listener = SyntaxErrorListener()
    parser = ASLParser(CommonTokenStream(ASLLexer(InputStream(definition))))
    parser.removeErrorListeners()
    parser.addErrorListener(listener)
    tree = parser.state_machine()
    if listener.errors:
        raise ASLParserException(errors=listener.errors)
    return tree


def shared_client(region: str, service: str, state_credentials: Any = None) -> Any:
    """moto's boto_client_for (the same endpoint, keys and settings; moto ignores the
    state's credentials too), one client per region, service and endpoint."""
    from moto.core.models import botocore_stubber
    from moto.settings import moto_server_port

    endpoint = None if botocore_stubber.enabled else f"http://localhost:{moto_server_port()}"
    key = (region, service, endpoint)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = _new_client(region, service, endpoint)
    return client


def _new_client(region: str, service: str, endpoint: str | None) -> Any:
    import boto3
    from botocore.config import Config
    from moto.stepfunctions.parser.asl.component.common.timeouts.timeout import (
        TimeoutSeconds,
    )

    config = Config(
        parameter_validation=False,
        retries={"max_attempts": 0, "total_max_attempts": 1},
        connect_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS,
        read_timeout=TimeoutSeconds.DEFAULT_TIMEOUT_SECONDS,
        max_pool_connections=POOL_CONNECTIONS,
    )
    return boto3.client(
        service_name=service,
        region_name=region,
        aws_access_key_id="ak",
        aws_secret_access_key="sk",
        endpoint_url=endpoint,
        config=config,
    )
