"""The bounded offset map: SipHash-128, numba kernel vs Python twin, and semantics vs a dict.

Oracles:

* the reference SipHash test vectors (``vectors_sip128`` of veorq/SipHash ``vectors.h``: key
  bytes 0..15, message ``i`` = bytes 0..i-1, 16 output bytes = h0 then h1, little-endian);
* numba kernels vs their Python twins: hashes, every word of the slot table (through its
  three column views), the counters and every return value, on hypothesis-generated rows in
  small tables (probing and full stops happen);
* a dict model of spec §3 (latest offset per key, -1 when absent, null keys and rows below
  ``min_offset`` skipped, the ``size < limit`` check before every keyed put, overwrite included).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seglog.core.offset_map import (
    MAX_MEMORY_BYTES,
    OffsetMap,
    is_prime,
    largest_prime_at_most,
)
from seglog.errors import InvalidConfigError, OffsetMapFullError
from seglog.kernels import DISABLE_NUMBA_ENV, numba_enabled
from seglog.kernels.offset_map_py import siphash128_py

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BOTH = pytest.mark.parametrize("use_numba", [True, False], ids=["numba", "twin"])
KEY = bytes(range(16))
INT64_MAX = (1 << 63) - 1

# veorq/SipHash vectors.h, vectors_sip128[i]: SipHash-2-4-128 of bytes(range(i)) under key
# bytes(range(16)), all 64 entries as printed there (16 bytes each, in output order).
SIP128_VECTORS = [
    "a3817f04ba25a8e66df67214c7550293",
    "da87c1d86b99af44347659119b22fc45",
    "8177228da4a45dc7fca38bdef60affe4",
    "9c70b60c5267a94e5f33b6b02985ed51",
    "f88164c12d9c8faf7d0f6e7c7bcd5579",
    "1368875980776f8854527a07690e9627",
    "14eeca338b208613485ea0308fd7a15e",
    "a1f1ebbed8dbc153c0b84aa61ff08239",
    "3b62a9ba6258f5610f83e264f31497b4",
    "264499060ad9baabc47f8b02bb6d71ed",
    "00110dc378146956c95447d3f3d0fbba",
    "0151c568386b6677a2b4dc6f81e5dc18",
    "d626b266905ef35882634df68532c125",
    "9869e247e9c08b10d029934fc4b952f7",
    "31fcefac66d7de9c7ec7485fe4494902",
    "5493e99933b0a8117e08ec0f97cfc3d9",
    "6ee2a4ca67b054bbfd3315bf85230577",
    "473d06e8738db89854c066c47ae47740",
    "a426e5e423bf4885294da481feaef723",
    "78017731cf65fab074d5208952512eb1",
    "9e25fc833f2290733e9344a5e83839eb",
    "568e495abe525a218a2214cd3e071d12",
    "4a29b54552d16b9a469c10528eff0aae",
    "c9d184ddd5a9f5e0cf8ce29a9abf691c",
    "2db479ae78bd50d8882a8a178a6132ad",
    "8ece5f042d5e447b5051b9eacb8d8f6f",
    "9c0b53b4b3c307e87eaee08678141f66",
    "abf248af69a6eae4bfd3eb2f129eeb94",
    "0664da1668574b88b935f3027358aef4",
    "aa4b9dc4bf337de90cd4fd3c467c6ab7",
    "ea5c7f471faf6bde2b1ad7d4686d2287",
    "2939b0183223fafc1723de4f52c43d35",
    "7c3956ca5eeafc3e363e9d556546eb68",
    "77c6077146f01c32b6b69d5f4ea9ffcf",
    "37a6986cb8847edf0925f0f1309b54de",
    "a705f0e69da9a8f907241a2e923c8cc8",
    "3dc47d1f29c448461e9e76ed904f6711",
    "0d62bf01e6fc0e1a0d3c4751c5d3692b",
    "8c03468bca7c669ee4fd5e084bbee7b5",
    "528a5bb93baf2c9c4473cce5d0d22bd9",
    "df6a301e95c95dad97ae0cc8c6913bd8",
    "801189902c857f39e73591285e70b6db",
    "e617346ac9c231bb3650ae34ccca0c5b",
    "27d93437efb721aa401821dcec5adf89",
    "89237d9ded9c5e78d8b1c9b166cc7342",
    "4a6d8091bf5e7d651189fa94a250b14c",
    "0e33f96055e7ae893ffc0e3dcf492902",
    "e61c432b720b19d18ec8d84bdc63151b",
    "f7e5aef549f782cf379055a608269b16",
    "438d030fd0b7a54fa837f2ad201a6403",
    "a590d3ee4fbf04e3247e0d27f286423f",
    "5fe2c1a172fe93c4b15cd37caef9f538",
    "2c97325cbd06b36eb2133dd08b3a017c",
    "92c814227a6bca949ff0659f002ad39e",
    "dce850110bd8328cfbd50841d6911d87",
    "67f14984c7da791248e32bb5922583da",
    "1938f2cf72d54ee97e94166fa91d2a36",
    "74481e9646ed49fe0f6224301604698e",
    "57fca5de98a9d6d8006438d0583d8a1d",
    "9fecde1cefdc1cbed4763674d9575359",
    "e3040c00eb28f15366ca73cbd872e740",
    "7697009a6a831dfecca91c5993670f7a",
    "5853542321f567a005d547a4f04759bd",
    "5150d1772f50834a503e069a973fbd7c",
]

Columns = tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int32]]


def columns(keys: list[bytes | None]) -> Columns:
    """Keys packed into one buffer, as scan_records lays them out (int64 pos, int32 length)."""
    data = bytearray(b"#")  # a leading byte so no key starts at 0 by construction
    positions, lengths = [], []
    for key in keys:
        if key is None:
            positions.append(-1)
            lengths.append(-1)
        else:
            positions.append(len(data))
            lengths.append(len(key))
            data += key
    return (
        np.frombuffer(bytes(data), dtype=np.uint8).copy(),
        np.array(positions, dtype=np.int64),
        np.array(lengths, dtype=np.int32),
    )


def offsets(values: list[int]) -> npt.NDArray[np.int64]:
    return np.array(values, dtype=np.int64)


def model_put(
    model: dict[bytes, int],
    latest: int,
    rows: list[tuple[bytes | None, int]],
    start: int,
    stop: int,
    min_offset: int,
    limit: int,
) -> tuple[int, int]:
    """Spec §3 on a dict: ``(returned row, latest_offset)``; updates ``model`` in place."""
    for row in range(start, stop):
        key, offset = rows[row]
        if key is None or offset < min_offset:
            continue
        if len(model) >= limit:
            return row, latest
        model[key] = offset
        latest = offset
    return stop, latest


def table(m: OffsetMap) -> tuple[object, ...]:
    """Everything observable about a map: columns, counters, key."""
    return (
        m.hash0.tobytes(),
        m.hash1.tobytes(),
        m.stored.tobytes(),
        m.size,
        m.latest_offset,
        m.lookups,
        m.probes,
    )


# --- SipHash-2-4-128 ---------------------------------------------------------------------------
def test_vectors_transcribed_whole() -> None:
    assert len(SIP128_VECTORS) == 64
    assert all(len(bytes.fromhex(v)) == 16 for v in SIP128_VECTORS)


def test_siphash128_twin_reference_vectors() -> None:
    k0 = int.from_bytes(KEY[:8], "little")
    k1 = int.from_bytes(KEY[8:], "little")
    for length, expected in enumerate(SIP128_VECTORS):
        h0, h1 = siphash128_py(bytes(range(length)), k0, k1)
        assert (h0.to_bytes(8, "little") + h1.to_bytes(8, "little")).hex() == expected, length


@BOTH
def test_hash_columns_reference_vectors(use_numba: bool) -> None:
    m = OffsetMap(1024, hash_key=KEY, use_numba=use_numba)
    data = np.arange(64, dtype=np.uint8)
    h0, h1 = m.hash_columns(data, np.zeros(64, dtype=np.int64), np.arange(64, dtype=np.int32))
    got = [
        int(a).to_bytes(8, "little") + int(b).to_bytes(8, "little")
        for a, b in zip(h0, h1, strict=True)
    ]
    assert [g.hex() for g in got] == SIP128_VECTORS


def test_siphash128_nb_reference_vectors() -> None:
    if not numba_enabled():
        pytest.skip(f"{DISABLE_NUMBA_ENV} is set")
    from seglog.kernels.offset_map import siphash128_nb

    data = np.arange(64, dtype=np.uint8)
    k0 = int.from_bytes(KEY[:8], "little")
    k1 = int.from_bytes(KEY[8:], "little")
    for length, expected in enumerate(SIP128_VECTORS):
        h0, h1 = siphash128_nb(data, 0, length, k0, k1)
        assert (int(h0).to_bytes(8, "little") + int(h1).to_bytes(8, "little")).hex() == expected


@FAST
@given(
    keys=st.lists(st.one_of(st.none(), st.binary(max_size=40)), max_size=30),
    hash_key=st.binary(min_size=16, max_size=16),
)
def test_numba_and_twin_hash_alike(keys: list[bytes | None], hash_key: bytes) -> None:
    data, pos, length = columns(keys)
    nb = OffsetMap(1024, hash_key=hash_key, use_numba=True).hash_columns(data, pos, length)
    py = OffsetMap(1024, hash_key=hash_key, use_numba=False).hash_columns(data, pos, length)
    assert nb[0].tobytes() == py[0].tobytes()
    assert nb[1].tobytes() == py[1].tobytes()
    k0 = int.from_bytes(hash_key[:8], "little")
    k1 = int.from_bytes(hash_key[8:], "little")
    for row, key in enumerate(keys):
        expected = (0, 0) if key is None else siphash128_py(key, k0, k1)
        assert (int(py[0][row]), int(py[1][row])) == expected


# --- numba vs twin: identical tables --------------------------------------------------------------
ALPHABET = [b"", b"a", b"b", b"key-1", b"key-2", b"\x00", b"\xff" * 9, b"long" * 5, b"x", b"y"]
row_strategy = st.tuples(st.one_of(st.none(), st.sampled_from(ALPHABET)), st.integers(0, 60))


@FAST
@given(
    rows=st.lists(row_strategy, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=3),
    memory_bytes=st.integers(48, 24 * 23),
    load_factor=st.sampled_from([0.5, 0.75, 0.9, 1.0]),
    min_offset=st.integers(0, 10),
    hash_key=st.binary(min_size=16, max_size=16),
)
def test_numba_and_twin_tables_alike(
    rows: list[tuple[bytes | None, int]],
    cuts: list[int],
    memory_bytes: int,
    load_factor: float,
    min_offset: int,
    hash_key: bytes,
) -> None:
    slots = largest_prime_at_most(memory_bytes // 24)
    if int(slots * load_factor) < 1:
        return
    maps = [
        OffsetMap(memory_bytes, load_factor, hash_key=hash_key, use_numba=flag)
        for flag in (True, False)
    ]
    data, pos, length = columns([k for k, _ in rows])
    offs = offsets([o for _, o in rows])
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    for start, stop in itertools.pairwise(bounds):
        results = [
            m.put_columns(
                data, pos, length, offs, start_row=start, stop_row=stop, min_offset=min_offset
            )
            for m in maps
        ]
        assert results[0] == results[1]
        assert table(maps[0]) == table(maps[1])
    probe_data, probe_pos, probe_length = columns([*ALPHABET, None, b"absent"])
    got = [m.get_columns(probe_data, probe_pos, probe_length).tolist() for m in maps]
    assert got[0] == got[1]
    assert table(maps[0]) == table(maps[1])


# --- semantics vs a dict model --------------------------------------------------------------------
@BOTH
@FAST
@given(
    rows=st.lists(row_strategy, max_size=40),
    cuts=st.lists(st.integers(0, 40), max_size=3),
    memory_bytes=st.integers(48, 24 * 29),
    load_factor=st.sampled_from([0.3, 0.75, 0.9, 1.0]),
    min_offset=st.integers(0, 10),
)
def test_put_columns_matches_dict_model(
    use_numba: bool,
    rows: list[tuple[bytes | None, int]],
    cuts: list[int],
    memory_bytes: int,
    load_factor: float,
    min_offset: int,
) -> None:
    slots = largest_prime_at_most(memory_bytes // 24)
    limit = int(slots * load_factor)
    if limit < 1:
        return
    m = OffsetMap(memory_bytes, load_factor, use_numba=use_numba)
    assert (m.slots, m.limit) == (slots, limit)
    model: dict[bytes, int] = {}
    latest = -1
    data, pos, length = columns([k for k, _ in rows])
    offs = offsets([o for _, o in rows])
    bounds = sorted({0, len(rows), *(min(c, len(rows)) for c in cuts)})
    for start, stop in itertools.pairwise(bounds):
        expected, latest = model_put(model, latest, rows, start, stop, min_offset, limit)
        got = m.put_columns(
            data, pos, length, offs, start_row=start, stop_row=stop, min_offset=min_offset
        )
        assert got == expected
        assert m.size == len(model)
        assert m.latest_offset == latest
        assert m.is_full == (len(model) >= limit)
    probe_keys: list[bytes | None] = [*ALPHABET, None, b"absent"]
    probe_data, probe_pos, probe_length = columns(probe_keys)
    lookups = m.lookups
    got_offsets = m.get_columns(probe_data, probe_pos, probe_length).tolist()
    assert got_offsets == [-1 if k is None else model.get(k, -1) for k in probe_keys]
    assert m.lookups == lookups + len(probe_keys) - 1  # the null key is not looked up
    assert m.probes >= m.lookups
    for key in ALPHABET:
        assert m.get(key) == model.get(key, -1)
    assert m.utilization == len(model) / slots


@BOTH
def test_full_stop_before_overwrite_and_after_skips(use_numba: bool) -> None:
    m = OffsetMap(24 * 5, 0.5, hash_key=KEY, use_numba=use_numba)  # 5 slots, limit 2
    assert (m.slots, m.limit) == (5, 2)
    keys: list[bytes | None] = [b"a", b"b", None, b"a", b"a", b"c"]
    data, pos, length = columns(keys)
    offs = offsets([10, 11, 12, 3, 14, 15])
    # Row 2 is null, row 3 below min_offset: both skipped before the full check. Row 4 would
    # only overwrite "a", yet the map is full (size 2 == limit), so the put stops there.
    assert m.put_columns(data, pos, length, offs, min_offset=5) == 4
    assert (m.get(b"a"), m.get(b"b"), m.get(b"c")) == (10, 11, -1)
    assert m.latest_offset == 11
    assert m.size == 2 and m.is_full
    # Resuming at the stop row stops there again, and nothing changes.
    before = table(m)
    assert m.put_columns(data, pos, length, offs, start_row=4, min_offset=5) == 4
    assert table(m) == before
    # A range with only skipped rows ends normally even when the map is full.
    assert m.put_columns(data, pos, length, offs, start_row=2, stop_row=4, min_offset=5) == 4
    assert m.put_columns(data, pos, length, offs, start_row=3, stop_row=4, min_offset=5) == 4
    assert m.put_columns(data, pos, length, offs, start_row=2, stop_row=3, min_offset=5) == 3
    with pytest.raises(OffsetMapFullError):
        m.put(b"a", 20)  # an overwrite too: put checks the same size < limit
    assert m.get(b"a") == 10


@BOTH
def test_overwrite_below_limit_and_latest_offset(use_numba: bool) -> None:
    m = OffsetMap(1024, use_numba=use_numba)
    assert m.latest_offset == -1
    data, pos, length = columns([b"k", b"k", None, b"j", b"k"])
    assert m.put_columns(data, pos, length, offsets([5, 7, 8, 9, 6]), min_offset=0) == 5
    # The last put wins even with a smaller offset (the cleaner feeds offsets in order).
    assert (m.get(b"k"), m.get(b"j"), m.size, m.latest_offset) == (6, 9, 2, 6)
    m.update_latest_offset(42)
    assert m.latest_offset == 42
    m.put(b"new", INT64_MAX)  # the largest offset round-trips through offset + 1
    assert m.get(b"new") == INT64_MAX
    assert m.latest_offset == INT64_MAX


@BOTH
def test_counters_count_like_kafka(use_numba: bool) -> None:
    m = OffsetMap(24 * 1009, hash_key=KEY, use_numba=use_numba)
    data, pos, length = columns([b"a", None, b"b", b"a"])
    m.put_columns(data, pos, length, offsets([0, 1, 2, 3]), min_offset=0)
    assert m.lookups == 3  # one per keyed put, none for the null key
    assert m.probes >= 3
    probes = m.probes
    assert m.get_columns(*columns([None, b"a", b"zz"])).tolist() == [-1, 3, -1]
    assert m.lookups == 5
    assert m.probes >= probes + 2


@BOTH
def test_full_table_lookup_of_absent_key_ends(use_numba: bool) -> None:
    m = OffsetMap(24 * 7, 1.0, use_numba=use_numba)
    assert (m.slots, m.limit) == (7, 7)
    keys: list[bytes | None] = [bytes([i]) for i in range(7)]
    data, pos, length = columns(keys)
    assert m.put_columns(data, pos, length, offsets(list(range(7))), min_offset=0) == 7
    assert int(np.count_nonzero(m.stored)) == 7
    probes = m.probes
    assert m.get(b"absent") == -1
    assert m.probes == probes + 7  # every slot once, then give up
    assert [m.get(bytes([i])) for i in range(7)] == list(range(7))
    with pytest.raises(OffsetMapFullError):
        m.put(b"absent", 1)


@BOTH
def test_get_columns_fills_out(use_numba: bool) -> None:
    m = OffsetMap(1024, use_numba=use_numba)
    m.put(b"x", 4)
    out = np.full(3, 99, dtype=np.int64)
    assert m.get_columns(*columns([b"x", None, b"y"]), out=out) is out
    assert out.tolist() == [4, -1, -1]


# --- sizing ---------------------------------------------------------------------------------------
def _is_prime_miller_rabin(n: int) -> bool:
    """An independent primality check (deterministic for n < 3.3e24 with these bases)."""
    if n < 2:
        return False
    bases = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41)
    if n in bases:
        return True
    if any(n % p == 0 for p in bases):
        return False
    d, r = n - 1, 0
    while d % 2 == 0:
        d //= 2
        r += 1
    for a in bases:
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(r - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


@FAST
@given(n=st.one_of(st.integers(2, 20_000), st.integers(2, MAX_MEMORY_BYTES // 24)))
def test_largest_prime_at_most(n: int) -> None:
    p = largest_prime_at_most(n)
    assert p <= n
    assert _is_prime_miller_rabin(p)
    assert not any(_is_prime_miller_rabin(q) for q in range(p + 1, n + 1))
    assert is_prime(n) == _is_prime_miller_rabin(n)


def test_largest_prime_at_most_small() -> None:
    assert [largest_prime_at_most(n) for n in range(2, 12)] == [2, 3, 3, 5, 5, 7, 7, 7, 7, 11]
    with pytest.raises(ValueError):
        largest_prime_at_most(1)


@FAST
@given(memory_bytes=st.integers(48, 200_000), load_factor=st.floats(0.01, 1.0))
def test_slots_prime_and_24_bytes_per_slot(memory_bytes: int, load_factor: float) -> None:
    slots = largest_prime_at_most(memory_bytes // 24)
    if int(slots * load_factor) < 1:
        with pytest.raises(InvalidConfigError):
            OffsetMap(memory_bytes, load_factor, use_numba=False)
        return
    m = OffsetMap(memory_bytes, load_factor, use_numba=False)
    assert m.slots == slots and _is_prime_miller_rabin(m.slots)
    assert m.memory_bytes == 24 * m.slots <= memory_bytes
    assert m.hash0.nbytes + m.hash1.nbytes + m.stored.nbytes == 24 * m.slots
    assert [a.dtype.str for a in (m.hash0, m.hash1, m.stored)] == ["<u8", "<u8", "<i8"]
    assert m.limit == int(m.slots * load_factor) <= m.slots


@BOTH
def test_slot_words_are_adjacent(use_numba: bool) -> None:
    """One (slots, 3) table: slot s is the 24 contiguous bytes h0, h1, stored at 24 * s."""
    m = OffsetMap(24 * 11, 1.0, hash_key=KEY, use_numba=use_numba)
    views = (m.hash0, m.hash1, m.stored)
    base = m.hash0.__array_interface__["data"][0]
    assert [v.__array_interface__["data"][0] - base for v in views] == [0, 8, 16]
    assert all(v.strides == (24,) and v.shape == (11,) for v in views)
    table = m.stored.base  # the one array that owns all three columns
    assert isinstance(table, np.ndarray) and table.shape == (11, 3) and table.nbytes == 24 * 11
    assert all(v.base is table for v in views)
    m.put(b"k", 41)
    (slot,) = np.flatnonzero(m.stored)
    h0, h1 = m.hash_columns(*columns([b"k"]))
    word = int(m.hash0[slot]).to_bytes(8, "little") + int(m.hash1[slot]).to_bytes(8, "little")
    assert word == int(h0[0]).to_bytes(8, "little") + int(h1[0]).to_bytes(8, "little")
    assert (int(m.stored[slot]), m.get(b"k")) == (42, 41)


def test_kafka_default_buffer() -> None:
    m = OffsetMap(128 * 1024 * 1024, 0.9)
    assert (m.slots, m.limit) == (5_592_373, 5_033_135)
    assert m.memory_bytes == 24 * 5_592_373
    assert (m.size, m.latest_offset, m.lookups, m.probes, m.utilization) == (0, -1, 0, 0, 0.0)


@pytest.mark.parametrize("load_factor", [0.0, -0.5, 1.0001, 2, math.nan, math.inf, True, "0.5"])
def test_bad_load_factor(load_factor: object) -> None:
    with pytest.raises(InvalidConfigError, match="load_factor"):
        OffsetMap(1024, load_factor)  # type: ignore[arg-type]


@pytest.mark.parametrize("memory_bytes", [-1, 0, 24, 47, MAX_MEMORY_BYTES + 1, 1024.0, True])
def test_bad_memory(memory_bytes: object) -> None:
    with pytest.raises(InvalidConfigError, match="memory_bytes"):
        OffsetMap(memory_bytes)  # type: ignore[arg-type]


def test_map_that_holds_no_key() -> None:
    OffsetMap(48, 0.5)  # 2 slots, limit 1
    with pytest.raises(InvalidConfigError, match="holds no key"):
        OffsetMap(48, 0.4)  # 2 slots, int(0.8) == 0


@pytest.mark.parametrize("hash_key", [b"", bytes(15), bytes(17), "0123456789abcdef"])
def test_bad_hash_key(hash_key: object) -> None:
    with pytest.raises(InvalidConfigError, match="hash_key"):
        OffsetMap(1024, hash_key=hash_key)  # type: ignore[arg-type]


# --- clear and keys -------------------------------------------------------------------------------
@BOTH
def test_clear_empties_and_rekeys(use_numba: bool) -> None:
    m = OffsetMap(24 * 101, use_numba=use_numba)
    other = OffsetMap(24 * 101, use_numba=use_numba)
    assert len(m.hash_key) == 16 and m.hash_key != other.hash_key  # os.urandom per map
    first_key = m.hash_key
    data, pos, length = columns([b"a", b"b", b"c"])
    m.put_columns(data, pos, length, offsets([1, 2, 3]), min_offset=0)
    h_before = m.hash_columns(data, pos, length)
    m.clear()
    assert m.hash_key != first_key
    assert (m.size, m.latest_offset, m.lookups, m.probes) == (0, -1, 0, 0)
    assert not m.stored.any()
    h_after = m.hash_columns(data, pos, length)
    assert h_before[0].tobytes() != h_after[0].tobytes()  # a new key, new hashes
    assert m.get_columns(data, pos, length).tolist() == [-1, -1, -1]
    m.put_columns(data, pos, length, offsets([4, 5, 6]), min_offset=0)
    assert m.get_columns(data, pos, length).tolist() == [4, 5, 6]


@BOTH
def test_clear_keeps_a_fixed_key(use_numba: bool) -> None:
    m = OffsetMap(1024, hash_key=KEY, use_numba=use_numba)
    m.put(b"k", 1)
    m.clear()
    assert m.hash_key == KEY
    assert m.get(b"k") == -1


def test_env_disables_numba(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DISABLE_NUMBA_ENV, "1")
    assert not OffsetMap(1024).uses_numba
    assert not OffsetMap(1024, use_numba=True).uses_numba
    monkeypatch.delenv(DISABLE_NUMBA_ENV)
    assert OffsetMap(1024).uses_numba
    assert not OffsetMap(1024, use_numba=False).uses_numba


def test_columns_are_read_only_views() -> None:
    m = OffsetMap(1024)
    with pytest.raises(ValueError):
        m.stored[0] = 5


# --- argument checks ------------------------------------------------------------------------------
def test_argument_checks() -> None:
    m = OffsetMap(1024)
    data, pos, length = columns([b"abc", None])
    offs = offsets([0, 1])
    with pytest.raises(ValueError, match="row 0"):
        m.put_columns(data, pos + 5, length, offs, min_offset=0)
    with pytest.raises(ValueError, match="outside"):
        m.get_columns(data, pos - 2, length)
    with pytest.raises(TypeError):
        m.put_columns(data.astype(np.int8), pos, length, offs, min_offset=0)
    with pytest.raises(TypeError):
        m.put_columns(data, pos, length, offs.astype(np.int32), min_offset=0)
    with pytest.raises(ValueError, match="rows"):
        m.put_columns(data, pos, length[:1], offs, min_offset=0)
    with pytest.raises(ValueError, match="row range"):
        m.put_columns(data, pos, length, offs, start_row=1, stop_row=3, min_offset=0)
    with pytest.raises(ValueError, match="min_offset"):
        m.put_columns(data, pos, length, offs, min_offset=-1)
    with pytest.raises(TypeError, match="out"):
        m.get_columns(data, pos, length, out=np.empty(3, dtype=np.int64))
    with pytest.raises(ValueError, match="negative"):
        m.put(b"k", -1)
    # A span ending exactly at the buffer's end is fine; the null row's span is never checked.
    assert m.put_columns(data, pos, length, offs, min_offset=0) == 2
    assert m.size == 1


@BOTH
@given(
    keys=st.lists(st.sampled_from([b"a", b"b", b"c", b"dd", None]), min_size=1, max_size=60),
    base=st.integers(0, 5),
)
@settings(max_examples=40, deadline=None)
def test_superseded_marks_every_earlier_offset_of_a_key(
    use_numba: bool, keys: list[bytes | None], base: int
) -> None:
    """After the puts, a keyed record's mark is 0 iff no later record has its key; marks
    outside the array are not written."""
    data, key_position, key_length = columns(keys)
    record_offsets = offsets(list(range(base, base + len(keys))))
    m = OffsetMap(24 * 101, 0.9, hash_key=bytes(16), use_numba=use_numba)
    marks = np.zeros(max(len(keys) - 2, 0), dtype=np.uint8)
    m.put_columns(
        data,
        key_position,
        key_length,
        record_offsets,
        min_offset=0,
        superseded=marks,
        superseded_base=base,
    )
    last = {k: i for i, k in enumerate(keys) if k is not None}
    for i, key in enumerate(keys[: len(marks)]):
        expected = 0 if key is None or last[key] == i else 1
        assert marks[i] == expected
