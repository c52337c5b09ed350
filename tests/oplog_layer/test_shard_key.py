"""Shard keys: the server's hashed value and chunk-space extraction."""

from bson import Int64, MaxKey, MinKey

from mongosim.shardsim.shard_key import ShardKeyPattern, hash64


def test_hash64_matches_the_servers_startup_check():
    # hasher.cpp: BSON("check" << 42) hashes to -944302157085130861 with seed 0
    assert hash64(42) == Int64(-944302157085130861)
    # numbers hash as int64 whatever their BSON type
    assert hash64(42.0) == hash64(Int64(42)) == hash64(42)
    assert hash64("a") != hash64("b")


def test_hash64_hashes_the_canonical_type_of_bsontypes_h():
    """canonicalizeBSONType: MaxKey is 127, Code 60 (not a string's 15), CodeWScope 65."""
    import hashlib
    import struct

    from bson import Code, MaxKey, MinKey

    def bare(canonical: int) -> Int64:  # seed 0, then the type; MinKey/MaxKey hash no value bytes
        return Int64(struct.unpack("<q", hashlib.md5(struct.pack("<ii", 0, canonical)).digest()[:8])[0])

    assert hash64(MaxKey()) == bare(127)
    assert hash64(MinKey()) == bare(-1)
    assert hash64(Code("x")) != hash64("x")


def test_extract_and_query_targeting():
    p = ShardKeyPattern({"region": 1, "_id": 1})
    assert p.extract({"_id": 5, "region": "eu"}) == ("eu", 5)
    assert p.extract({"_id": 5}) == (None, 5)  # missing fields are null
    assert p.extract_from_query({"region": "eu", "_id": 5, "x": 1}) == ("eu", 5)
    assert p.extract_from_query({"region": "eu"}) is None
    assert p.extract_from_query({"region": {"$gt": "a"}, "_id": 1}) is None
    h = ShardKeyPattern({"user": "hashed"})
    assert h.extract({"user": 42}) == (hash64(42),)
    lo, hi = p.min_bound(), p.max_bound()
    assert isinstance(lo["region"], MinKey) and isinstance(hi["_id"], MaxKey)
