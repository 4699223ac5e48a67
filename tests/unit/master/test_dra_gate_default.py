"""The DRAResourceSlices gate: on for nfd-master, off for a masterless worker unless set."""

from __future__ import annotations

from nfd.master.options import MasterOptions


def test_master_reads_slices_by_default() -> None:
    assert MasterOptions().dra_resource_slices is True
    assert MasterOptions(feature_gates={"DRAResourceSlices": False}).dra_resource_slices is False


def test_masterless_worker_leaves_slices_unless_the_gate_is_set() -> None:
    assert MasterOptions(only_node="n1").dra_resource_slices is False
    assert MasterOptions(only_node="n1", feature_gates={"DRAResourceSlices": True}).dra_resource_slices is True
