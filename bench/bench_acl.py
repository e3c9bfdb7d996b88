"""ACL decisions: seglog's indexed :func:`decide` against a linear scan and a dictionary floor.

Per table size (10, 1 000 and 10 000 bindings over topics named ``team<T>.svc-<N>``, one team
per 10 bindings: 60 % literal names, 40 % prefixes (``team<T>.`` or ``team<T>.svc-``), about 3
``*``; 10 % DENY; 50 principals and ``User:*``), the same random questions (principal, host,
READ/WRITE/DESCRIBE, a topic name of the same shape) are answered by three contenders,
interleaved round-robin (a different one first each round) after an untimed warm-up:

* **indexed**: :func:`seglog.broker.acl.matching.decide` over an :class:`AclTable` (literal
  names in a dict, prefixes grouped by length);
* **linear scan**: the obvious authorizer, every binding checked against the resource
  (Kafka's pattern rules) and the entry, with the same answers (checked on every question);
* **floor**: one ``frozenset`` membership test per question (a precomputed answer set): what a
  decision cannot beat in Python.

Reported: microseconds per decision, median [min..max] of the rounds, and the ratios
linear / indexed and indexed / floor. A produce request asks once per topic, so the per-decision
cost is what authorization adds to a request.

Run: ``.venv/bin/python -m bench.bench_acl [--questions N] [--repeat R]``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine_info, write_results
from seglog.broker.acl.matching import AclTable, decide, entry_matches
from seglog.broker.acl.model import WILDCARD, AclBinding, PatternType, Permission
from seglog.broker.authorization import Operation, ResourceType

SIZES = (10, 1_000, 10_000)
OPERATIONS = (Operation.READ, Operation.WRITE, Operation.DESCRIBE)
Question = tuple[str, str, Operation, str]


def topic_name(size: int, rng: random.Random) -> str:
    """``team<T>.<service>-<N>``: a team prefix (one per 10 bindings), then a name."""
    return f"team{rng.randrange(max(size // 10, 1))}.svc-{rng.randrange(20)}"


def bindings(count: int, rng: random.Random) -> list[AclBinding]:
    found: list[AclBinding] = []
    while len(found) < count:
        principal = "User:*" if rng.random() < 0.05 else f"User:u{rng.randrange(50)}"
        roll = rng.random()
        name, pattern = topic_name(count, rng), PatternType.LITERAL
        if roll < 3 / count:  # a few cluster-wide ``*`` bindings, whatever the size
            name = WILDCARD
        elif roll >= 0.6:  # a team's prefix, or a team's service prefix
            name = name.split(".")[0] + "." if roll < 0.8 else name[: name.rindex("-") + 1]
            pattern = PatternType.PREFIXED
        permission = Permission.DENY if rng.random() < 0.1 else Permission.ALLOW
        operation = rng.choice(OPERATIONS)
        found.append(
            AclBinding(ResourceType.TOPIC, name, pattern, principal, "*", operation, permission)
        )
    return found


def linear_decide(acls: list[AclBinding], question: Question) -> bool:
    principal, host, operation, name = question
    allowed = False
    for acl in acls:
        if acl.pattern_type is PatternType.PREFIXED:
            covers = name.startswith(acl.resource_name)
        else:
            covers = acl.resource_name in (name, WILDCARD)
        if not covers:
            continue
        if entry_matches(acl, principal, host, operation):
            if acl.permission is Permission.DENY:
                return False
            allowed = True
    return allowed  # no ACL applies: denied (allow.everyone.if.no.acl.found=false)


def timed(run: Callable[[], int]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def measure(size: int, questions: int, repeat: int) -> dict[str, object]:
    rng = random.Random(size)
    acls = bindings(size, rng)
    table = AclTable(acls)
    asked: list[Question] = [
        (
            f"User:u{rng.randrange(50)}",
            "127.0.0.1",
            rng.choice(OPERATIONS),
            f"topic-{rng.randrange(size * 2)}",
        )
        for _ in range(questions)
    ]
    answers = [decide(table, p, h, o, ResourceType.TOPIC, n) for p, h, o, n in asked]
    assert answers == [linear_decide(acls, q) for q in asked], "the linear scan disagrees"
    allowed = frozenset(q for q, yes in zip(asked, answers, strict=True) if yes)

    def indexed() -> int:
        return sum(decide(table, p, h, o, ResourceType.TOPIC, n) for p, h, o, n in asked)

    def linear() -> int:
        return sum(linear_decide(acls, q) for q in asked)

    def floor() -> int:
        return sum(q in allowed for q in asked)

    contenders = {"indexed": indexed, "linear scan": linear, "floor": floor}
    for run in contenders.values():
        run()  # warm-up
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    names = list(contenders)
    for round_ in range(repeat):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            samples[name].append(timed(contenders[name]) / questions * 1e6)
    medians = {name: sorted(values)[len(values) // 2] for name, values in samples.items()}
    return {
        "bindings": size,
        "allowed_share": round(sum(answers) / questions, 3),
        "us_per_decision": {n: [medians[n], min(v), max(v)] for n, v in samples.items()},
        "linear_over_indexed": medians["linear scan"] / medians["indexed"],
        "indexed_over_floor": medians["indexed"] / medians["floor"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    results = [measure(size, args.questions, args.repeat) for size in SIZES]
    print(
        "| bindings | indexed us | linear scan us | floor us | linear / indexed | indexed / floor |"
    )
    print("|---:|---:|---:|---:|---:|---:|")
    for r in results:
        us = r["us_per_decision"]
        assert isinstance(us, dict)
        ratios = f"{r['linear_over_indexed']:.0f}x | {r['indexed_over_floor']:.0f}x"
        print(
            f"| {r['bindings']} | {us['indexed'][0]:.2f} | {us['linear scan'][0]:.1f} | "
            f"{us['floor'][0]:.3f} | {ratios} |"
        )
    path = write_results("acl", {"machine": machine_info(), "results": results})
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
