"""``seglog transactions --bootstrap-server HOST:PORT``: the same tables from a running server.

A small synchronous client over :mod:`seglog.protocol`: one TCP connection to the first
reachable ``HOST:PORT`` of the list, ApiVersions first (each request then goes at the highest
version both sides know; an API the server does not serve is named in the error), then:

* ``--list``: ListTransactions (66); the coordinator column is the node id Metadata (3) gives;
* ``--describe``: DescribeTransactions (65);
* ``--describe-producers``: DescribeProducers (61);
* ``--find-hanging``: Metadata for the partitions (every topic's, internal ones included, without
  ``--topic``), DescribeProducers, then (only when a candidate is found, as Kafka's tool)
  ListTransactions filtered on the candidates' producer ids and DescribeTransactions;
* ``--abort``: DescribeProducers (with ``--start-offset``) then WriteTxnMarkers (27): an ABORT
  marker for that producer on that partition.

A refused request prints Kafka's error name and message and exits 1; a server that cannot be
reached or that closes the connection is a :class:`~seglog.errors.SeglogError` (exit 1).
"""

from __future__ import annotations

import argparse
import socket
import struct
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from seglog.cli.common import EXIT_FAILURE, EXIT_OK, print_table
from seglog.cli.transactions_view import (
    DESCRIBE_HEADER,
    HANGING_HEADER,
    LIST_HEADER,
    MS_PER_MINUTE,
    PRODUCERS_HEADER,
    ProducerView,
    TxnDescription,
    TxnListing,
    abort_spec_text,
    describe_row,
    find_open_transaction,
    hanging,
    hanging_rows,
    list_rows,
    open_candidates,
    producer_rows,
)
from seglog.errors import ProtocolDecodeError, SeglogError
from seglog.format.topic_names import TopicPartition
from seglog.protocol import codec, messages
from seglog.protocol.error_codes import ErrorCode
from seglog.protocol.framing import response_header_version

T = TypeVar("T")
_SIZE = struct.Struct(">i")
CONNECT_TIMEOUT_S = 30.0
MAX_RESPONSE_BYTES = 100 * 1024 * 1024
CLIENT_ID = "seglog-transactions"


class ServerError(SeglogError):
    """The server could not be reached, does not serve an API, or broke the protocol."""


class _Refused(Exception):
    """A request the server answered with an error: the line printed on stderr."""


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(min(size - len(data), 1 << 20))
        if not chunk:
            raise ServerError(f"the server closed the connection after {len(data)} of {size} bytes")
        data += chunk
    return bytes(data)


class AdminConnection:
    """One connection to a server; :meth:`call` sends a request and decodes its answer."""

    def __init__(self, bootstrap: str) -> None:
        self.address = ""
        problems = []
        for address in (a.strip() for a in bootstrap.split(",") if a.strip()):
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                raise ServerError(f"--bootstrap-server {address!r} is not HOST:PORT")
            try:
                self._sock = socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S)
            except OSError as exc:
                problems.append(f"{address}: {exc.strerror or exc}")
                continue
            self.address = address
            break
        if not self.address:
            raise ServerError("cannot connect to " + "; ".join(problems or [repr(bootstrap)]))
        self._correlation = 0
        versions = self.call(messages.ApiVersionsRequest(), 0, messages.ApiVersionsResponse)
        self._versions = {k.api_key: (k.min_version, k.max_version) for k in versions.api_keys}

    def close(self) -> None:
        self._sock.close()

    def __enter__(self) -> AdminConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version_of(self, request_cls: type) -> int:
        """The highest version of ``request_cls`` both the server and seglog's codec know."""
        spec = codec.spec_of(request_cls)
        served = self._versions.get(spec.api_key)
        name = spec.name.removesuffix("Request")
        if served is None:
            raise ServerError(
                f"the server at {self.address} does not serve {name} (API key {spec.api_key})"
            )
        low, high = max(served[0], spec.valid_versions[0]), min(served[1], spec.valid_versions[1])
        if low > high:
            raise ServerError(
                f"the server at {self.address} serves {name} v{served[0]}-{served[1]}, "
                f"none of v{spec.valid_versions[0]}-{spec.valid_versions[1]}"
            )
        return high

    def call(self, request: Any, version: int, response_cls: type[T]) -> T:
        """Send ``request`` at ``version``; the decoded response."""
        spec = codec.spec_of(type(request))
        self._correlation += 1
        header = messages.RequestHeader(
            request_api_key=spec.api_key,
            request_api_version=version,
            correlation_id=self._correlation,
            client_id=CLIENT_ID,
        )
        header_version = 2 if spec.is_flexible(version) else 1
        frame = codec.encode(header, header_version) + codec.encode(request, version)
        try:
            self._sock.sendall(_SIZE.pack(len(frame)) + frame)
            (size,) = _SIZE.unpack(_read_exactly(self._sock, 4))
            if not 0 < size <= MAX_RESPONSE_BYTES:
                raise ServerError(f"a response of {size} bytes from {self.address}")
            data = _read_exactly(self._sock, size)
        except OSError as exc:
            raise ServerError(f"{self.address}: {exc.strerror or exc}") from None
        try:
            answer, end = codec.decode(
                messages.ResponseHeader,
                data,
                response_header_version(spec.api_key, version),
                whole=False,
            )
            body, _ = codec.decode(response_cls, data, version, offset=end)
        except ProtocolDecodeError as exc:
            raise ServerError(f"{self.address} answered with a malformed response: {exc}") from None
        if answer.correlation_id != self._correlation:
            raise ServerError(f"{self.address} answered another request")
        return body

    def request(self, request: Any, response_cls: type[T]) -> T:
        """Send ``request`` at the best common version."""
        return self.call(request, self.version_of(type(request)), response_cls)


def _error_text(code: int, message: str | None = None) -> str:
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error code {code}"
    return f"{name}" + (f": {message}" if message else "")


def run_online(args: argparse.Namespace, *, clock: Callable[[], int]) -> int:
    """``seglog transactions`` against ``args.bootstrap_server``; ``clock``: now, in ms."""
    with AdminConnection(args.bootstrap_server) as conn:
        try:
            if args.list:
                _list(conn)
            elif args.describe:
                _describe(conn, args.transactional_id, clock())
            elif args.describe_producers:
                tp = TopicPartition(args.topic, args.partition)
                print_table(producer_rows(describe_producers(conn, [tp])[tp]), PRODUCERS_HEADER,
                            sys.stdout)  # fmt: skip
            elif args.find_hanging:
                _find_hanging(conn, args, clock)
            else:
                _abort(conn, args)
        except _Refused as refused:
            print(str(refused), file=sys.stderr)
            return EXIT_FAILURE
    return EXIT_OK


def node_id(conn: AdminConnection) -> int:
    """The node id of the server (the coordinator column)."""
    answer = conn.request(messages.MetadataRequest(topics=[]), messages.MetadataResponse)
    return answer.brokers[0].node_id if answer.brokers else -1


def list_transactions(
    conn: AdminConnection, producer_ids: list[int] | None = None
) -> list[TxnListing]:
    """ListTransactions (of these producer ids only, when given)."""
    request = messages.ListTransactionsRequest(producer_id_filters=producer_ids or [])
    answer = conn.request(request, messages.ListTransactionsResponse)
    if answer.error_code:
        raise _Refused(f"Failed to list transactions: {_error_text(answer.error_code)}")
    return [
        TxnListing(s.transactional_id, s.producer_id, s.transaction_state)
        for s in answer.transaction_states
    ]


def describe_transactions(conn: AdminConnection, ids: list[str]) -> dict[str, TxnDescription]:
    """DescribeTransactions; ids the server does not know are left out."""
    request = messages.DescribeTransactionsRequest(transactional_ids=ids)
    answer = conn.request(request, messages.DescribeTransactionsResponse)
    out = {}
    for s in answer.transaction_states:
        if s.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            continue
        if s.error_code:
            raise _Refused(
                f"Failed to describe transaction state of transactional-id "
                f"`{s.transactional_id}`: {_error_text(s.error_code)}"
            )
        partitions = tuple(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions)
        out[s.transactional_id] = TxnDescription(
            s.transactional_id,
            s.producer_id,
            s.producer_epoch,
            s.transaction_state,
            s.transaction_timeout_ms,
            s.transaction_start_time_ms,
            partitions,
        )
    return out


def describe_producers(
    conn: AdminConnection, partitions: list[TopicPartition]
) -> dict[TopicPartition, list[ProducerView]]:
    """DescribeProducers of ``partitions`` (any partition error is refused)."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    request = messages.DescribeProducersRequest(
        topics=[
            messages.DescribeProducersRequestTopicRequest(name=t, partition_indexes=ps)
            for t, ps in by_topic.items()
        ]
    )
    answer = conn.request(request, messages.DescribeProducersResponse)
    out: dict[TopicPartition, list[ProducerView]] = {}
    for topic in answer.topics:
        for p in topic.partitions:
            tp = TopicPartition(topic.name, p.partition_index)
            if p.error_code:
                raise _Refused(
                    f"Failed to describe producers for partition {tp} on leader: "
                    f"{_error_text(p.error_code, p.error_message)}"
                )
            out[tp] = [
                ProducerView(
                    s.producer_id,
                    s.producer_epoch,
                    s.coordinator_epoch,
                    s.last_sequence,
                    s.last_timestamp,
                    s.current_txn_start_offset,
                )
                for s in p.active_producers
            ]
    missing = [tp for tp in partitions if tp not in out]
    if missing:
        raise ServerError(f"{conn.address} did not answer for {missing[0]}")
    return out


def _list(conn: AdminConnection) -> None:
    listings = list_transactions(conn)
    print_table(list_rows(node_id(conn), listings), LIST_HEADER, sys.stdout)


def _describe(conn: AdminConnection, transactional_id: str, now: int) -> None:
    found = describe_transactions(conn, [transactional_id]).get(transactional_id)
    if found is None:
        raise _Refused(
            f"Failed to describe transaction state of transactional-id `{transactional_id}`: "
            "The transactionalId could not be found."
        )
    row = describe_row(node_id(conn), found, now_ms=now)
    print_table([row], DESCRIBE_HEADER, sys.stdout)


def _partitions(conn: AdminConnection, topic: str | None) -> list[TopicPartition]:
    topics = None if topic is None else [messages.MetadataRequestMetadataRequestTopic(name=topic)]
    request = messages.MetadataRequest(topics=topics, allow_auto_topic_creation=False)
    answer = conn.request(request, messages.MetadataResponse)
    out = []
    for t in answer.topics:
        if t.error_code:
            raise _Refused(f"Failed to describe topic {t.name}: {_error_text(t.error_code)}")
        out += [TopicPartition(t.name or "", p.partition_index) for p in t.partitions]
    return sorted(out)


def _find_hanging(
    conn: AdminConnection, args: argparse.Namespace, clock: Callable[[], int]
) -> None:
    if args.topic is not None and args.partition is not None:
        wanted = [TopicPartition(args.topic, args.partition)]
    else:
        wanted = _partitions(conn, args.topic)
    producers = describe_producers(conn, wanted) if wanted else {}
    now = clock()
    candidates = open_candidates(
        producers, max_timeout_ms=args.max_transaction_timeout * MS_PER_MINUTE, now_ms=now
    )
    found = []
    if candidates:
        pids = sorted({p.producer_id for _, p in candidates})
        ids = {t.transactional_id: t.producer_id for t in list_transactions(conn, pids)}
        described = describe_transactions(conn, sorted(ids)) if ids else {}
        by_producer = {d.producer_id: d for d in described.values() if d.producer_id in pids}
        found = hanging(candidates, by_producer)
    print_table(hanging_rows(found, now_ms=now), HANGING_HEADER, sys.stdout)


def _abort(conn: AdminConnection, args: argparse.Namespace) -> None:
    tp = TopicPartition(args.topic, args.partition)
    if args.start_offset is not None:
        found = find_open_transaction(describe_producers(conn, [tp])[tp], args.start_offset)
        if found is None:
            raise _Refused(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {tp}"
            )
        pid, epoch, coordinator_epoch = found
    else:
        pid, epoch = args.producer_id, args.producer_epoch
        coordinator_epoch = max(args.coordinator_epoch, 0)
    marker = messages.WriteTxnMarkersRequestWritableTxnMarker(
        producer_id=pid,
        producer_epoch=epoch,
        transaction_result=False,
        topics=[
            messages.WriteTxnMarkersRequestWritableTxnMarkerTopic(
                name=tp.topic, partition_indexes=[tp.partition]
            )
        ],
        coordinator_epoch=coordinator_epoch,
    )
    answer = conn.request(
        messages.WriteTxnMarkersRequest(markers=[marker]), messages.WriteTxnMarkersResponse
    )
    codes = [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]
    if codes != [0]:
        spec = abort_spec_text(tp, pid, epoch, coordinator_epoch)
        problem = _error_text(next((c for c in codes if c), ErrorCode.UNKNOWN_SERVER_ERROR))
        raise _Refused(f"Failed to abort transaction {spec}: {problem}")
