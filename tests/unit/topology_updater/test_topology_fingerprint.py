from __future__ import annotations

import json
import os
import random

from nfd.topology_updater.fingerprint import sign, xxh64

DATA = os.path.join(os.path.dirname(__file__), "data", "podfingerprint_pods.json")


def test_xxh64_reference_vectors() -> None:
    # published XXH64 test vectors (seed 0), covering the <4, <8, <32 and >=32 byte paths
    assert xxh64(b"") == 0xEF46DB3751D8E999
    assert xxh64(b"a") == 0xD24EC4F1A98C6E5B
    assert xxh64(b"abc") == 0x44BC2CF5AD770999
    assert xxh64(b"Nobody inspects the spammish repetition") == 0xFBCEA83C8A378BF1


def test_matches_podfingerprint_library_vector() -> None:
    with open(DATA) as f:
        pods = json.load(f)
    assert sign((p["namespace"], p["name"]) for p in pods) == "pfp0v001e477a4e3b2fc0ec6"


def test_order_independent_and_set_sensitive() -> None:
    pods = [(f"ns{i % 3}", f"pod-{i}") for i in range(50)]
    shuffled = pods[:]
    random.Random(1).shuffle(shuffled)
    assert sign(pods) == sign(shuffled)
    assert sign(pods) != sign(pods[:-1])
    # namespace and name are not simply concatenated
    assert sign([("ab", "c")]) != sign([("a", "bc")])
    assert sign(pods).startswith("pfp0v001") and len(sign(pods)) == 8 + 16


def test_memo_signs_as_sign_while_the_set_changes() -> None:
    from nfd.topology_updater.fingerprint import Memo

    memo = Memo()
    pods = [(f"ns{i % 3}", f"pod-{i}") for i in range(50)]
    for cut in (50, 50, 49, 10, 50, 0, 1, 1):
        now = pods[:cut] + pods[:1]  # a duplicate too: hashed twice, as sign does
        assert memo.sign(now) == sign(now)
