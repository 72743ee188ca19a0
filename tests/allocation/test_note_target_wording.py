"""The reference says what the note target hashes: the normalized body (SPEC §4.8)."""
from __future__ import annotations

from allocation.conflict_keys import note_target
from fronts.reference.allocation import allocation_section


def test_the_reference_names_the_normalized_body_and_the_rule_hashes_it():
    key = allocation_section()["conflict_key"]
    assert "sha256(normalize_note_body(body))[:16]" in key["note_target"]
    assert "case kept" in key["normalize_note_body"]
    same = [note_target("s", task_number=1, criterion=None, member_id=2, body=body)
            for body in ("Say more  about\tkeys. ", "Say more about keys.")]
    assert same[0] == same[1]
    assert same[1] != note_target("s", task_number=1, criterion=None, member_id=2, body="say more about keys.")
