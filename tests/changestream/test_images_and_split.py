"""Pre- and post-images, updateLookup, and $changeStreamSplitLargeEvent (replica-set streams)."""

from __future__ import annotations

import pytest

from mongosim.testing import CommandError
from mongosim.oplog.resume_token import decode_resume_token
from tests.changestream.conftest import drain


async def test_pre_and_post_images(replset):
    core, c = replset
    await c.command("db", {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    await c.insert("db", "c", [{"_id": 1, "a": 1}])
    cs = c.watch("db", "c", fullDocument="required", fullDocumentBeforeChange="required")
    await cs.open()
    await c.update("db", "c", {"_id": 1}, {"$set": {"a": 2}})
    await c.update("db", "c", {"_id": 1}, {"b": 1})
    await c.delete("db", "c", {"_id": 1})
    upd, rep, dele = await drain(cs, 3)
    assert list(upd)[-2:] == ["fullDocumentBeforeChange", "fullDocument"]
    assert upd["fullDocumentBeforeChange"] == {"_id": 1, "a": 1} and upd["fullDocument"] == {"_id": 1, "a": 2}
    assert rep["fullDocumentBeforeChange"] == {"_id": 1, "a": 2} and rep["fullDocument"] == {"_id": 1, "b": 1}
    assert dele["fullDocumentBeforeChange"] == {"_id": 1, "b": 1} and "fullDocument" not in dele


async def test_images_missing(replset):
    core, c = replset
    await c.insert("db", "c", [{"_id": 1, "a": 1}])
    avail = c.watch("db", "c", fullDocument="whenAvailable", fullDocumentBeforeChange="whenAvailable")
    req = c.watch("db", "c", fullDocumentBeforeChange="required")
    await avail.open()
    await req.open()
    await c.update("db", "c", {"_id": 1}, {"$set": {"a": 2}})
    (ev,) = await drain(avail, 1)
    assert ev["fullDocument"] is None and ev["fullDocumentBeforeChange"] is None
    with pytest.raises(CommandError) as ei:
        await drain(req, 1)
    assert ei.value.code == 47


async def test_update_lookup_reads_the_current_version(replset):
    core, c = replset
    await c.insert("db", "c", [{"_id": 1, "a": 1}])
    cs = c.watch("db", "c", fullDocument="updateLookup")
    await cs.open()
    await c.update("db", "c", {"_id": 1}, {"$set": {"a": 2}})
    await c.update("db", "c", {"_id": 1}, {"$set": {"a": 3}})
    await c.delete("db", "c", {"_id": 1})
    first, second, _ = await drain(cs, 3)
    # the lookup happens when the event is read: the document is already gone
    assert first["fullDocument"] is None and second["fullDocument"] is None
    await c.insert("db", "c", [{"_id": 2, "a": 1}])
    await c.update("db", "c", {"_id": 2}, {"$set": {"a": 5}})
    _ins, upd = await drain(cs, 2)
    assert upd["fullDocument"] == {"_id": 2, "a": 5}


async def test_split_large_event_and_resume_from_a_fragment(replset):
    core, c = replset
    await c.command("db", {"create": "c", "changeStreamPreAndPostImages": {"enabled": True}})
    big = "x" * (6 * 1024 * 1024)
    await c.insert("db", "c", [{"_id": 1, "a": big}])
    opts = dict(fullDocumentBeforeChange="required", fullDocument="required", batch_size=1)
    cs = c.watch("db", "c", [{"$changeStreamSplitLargeEvent": {}}], **opts)
    await cs.open()
    await c.update("db", "c", {"_id": 1}, {"$set": {"b": big}})
    frags = await drain(cs, 2)
    assert [f["splitEvent"] for f in frags] == [{"fragment": 1, "of": 2}, {"fragment": 2, "of": 2}]
    assert [decode_resume_token(f["_id"]).fragment_num for f in frags] == [0, 1]
    assert list(frags[0])[:2] == ["_id", "splitEvent"]
    assert "updateDescription" in frags[0] and "fullDocumentBeforeChange" in frags[0] and "fullDocument" in frags[1]
    again = c.watch("db", "c", [{"$changeStreamSplitLargeEvent": {}}], resumeAfter=frags[0]["_id"], **opts)
    await again.open()
    (rest,) = await drain(again, 1)
    assert rest["_id"] == frags[1]["_id"] and rest["splitEvent"] == {"fragment": 2, "of": 2}
    too_big = c.watch("db", "c", fullDocumentBeforeChange="required", fullDocument="required")
    await too_big.open()
    await c.update("db", "c", {"_id": 1}, {"$set": {"c": 1}})
    with pytest.raises(CommandError) as ei:
        await drain(too_big, 1)
    assert ei.value.code == 10334
