"""Consumer groups through ``seglog serve``: the place for the group tests (none here yet).

The classic group protocol (FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch) is being built beside this harness; its end-to-end tests go in this
module, one test per scenario and client (kcat ``-G``, confluent-kafka, kafka-python, aiokafka):

* a group of two members splits the partitions, and rebalances when one leaves;
* committed offsets resume the group after ``serve.restart()`` (``restart(same_port=True)``
  keeps connected clients);
* ``seglog consumer-groups --describe`` shows the lag the clients see.

The fixtures are those of ``conftest.py``: ``serve`` / ``serve_factory`` (the servers already
run with ``group.initial.rebalance.delay.ms=0``), ``kcat``; produce and read with
``serve_clients.produce_with`` and the readers of ``serve_python_clients``.
"""
