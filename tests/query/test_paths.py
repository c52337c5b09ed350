"""Plain dotted-path helpers."""

from mongosim.shardsim.query.paths import MISSING, array_index, get_path, is_array_index, set_path, split, unset_path


def test_get_set_unset():
    doc = {"a": [{"b": 1}, 2], "c": {"0": "x"}}
    assert get_path(doc, "a.0.b") == 1 and get_path(doc, "c.0") == "x" and get_path(doc, "a.5") is MISSING
    assert get_path(doc, "a.b") is MISSING
    set_path(doc, "a.3.z", 1)
    assert doc["a"] == [{"b": 1}, 2, None, {"z": 1}]
    set_path(doc, "n.m", 2)
    assert doc["n"] == {"m": 2}
    assert unset_path(doc, "a.1") and doc["a"][1] is None
    assert unset_path(doc, "n.m") and doc["n"] == {}
    assert not unset_path(doc, "q.r")


def test_numeric_components():
    assert split("a.b") == ("a", "b")
    assert is_array_index("0") and is_array_index("12") and not is_array_index("01") and not is_array_index("-1")
    assert array_index("01") == 1 and array_index("x") is None
