"""The test failpoints drivers' change-stream tests rely on, in both topologies.

- failGetMoreAfterCursorCheckout (getmore_cmd.cpp, cluster_find.cpp): the getMore
  fails once its cursor is checked out; the error gets the labels a real failure
  would (error_labels.cpp: ResumableChangeStreamError for a resumable code on a
  change-stream getMore) and the cursor is killed.
- failCommand on a change-stream getMore fires before any cursor is checked out:
  the label builder finds no originating command (CurOp::originatingCommand), so
  no ResumableChangeStreamError (the spec's "change stream does not resume if
  error does not contain ResumableChangeStreamError").  On the aggregate that
  opens a stream the command itself is the change stream, so the label is there.
"""

from __future__ import annotations

import pytest

from mongosim.core import open_cluster
from mongosim.testing import AsyncClient, CommandError
from tests.changestream.conftest import EPOCH


@pytest.fixture(params=["replset", "sharded"])
async def client(request, autojump_clock):
    async with open_cluster(topology=request.param, shards=2, listen=False, epoch=EPOCH, instant_hwm=True) as core:
        service = core.frontend if request.param == "replset" else core.router
        c = AsyncClient(service)
        await c.insert("db", "c", [{"_id": 0}])
        yield c


async def open_stream(c: AsyncClient) -> int:
    reply = await c.command("db", {"aggregate": "c", "pipeline": [{"$changeStream": {}}], "cursor": {}})
    return reply["cursor"]["id"]


async def get_more(c: AsyncClient, cid: int) -> dict:
    return await c.command("db", {"getMore": cid, "collection": "c", "maxTimeMS": 10})


async def fail_point(c: AsyncClient, name: str, data: dict, mode=None) -> None:
    await c.admin({"configureFailPoint": name, "mode": mode or {"times": 1}, "data": data})


async def test_get_more_after_checkout_resumable_code_is_labelled_and_kills_the_cursor(client):
    cid = await open_stream(client)
    await fail_point(client, "failGetMoreAfterCursorCheckout", {"errorCode": 6, "closeConnection": False})
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.code == 6 and info.value.labels == ["ResumableChangeStreamError"]
    assert "failGetMoreAfterCursorCheckout" in info.value.reply["errmsg"]
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.code == 43  # CursorNotFound: the failed getMore killed its cursor
    # times: 1 is used up; a new stream's getMore works
    await get_more(client, await open_stream(client))


async def test_get_more_after_checkout_non_resumable_code_has_no_label(client):
    cid = await open_stream(client)
    await fail_point(client, "failGetMoreAfterCursorCheckout", {"errorCode": 9}, mode="alwaysOn")  # FailedToParse
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.code == 9 and "errorLabels" not in info.value.reply
    await client.admin({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": "off"})


async def test_get_more_after_checkout_only_counts_a_checked_out_cursor(client):
    await fail_point(client, "failGetMoreAfterCursorCheckout", {"errorCode": 6})
    with pytest.raises(CommandError) as info:
        await get_more(client, 12345)  # no such cursor: the getMore's own error, failpoint not consumed
    assert info.value.code == 43
    cid = await open_stream(client)
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.code == 6


async def test_get_more_after_checkout_respects_namespace_and_app_name(client):
    cid = await open_stream(client)
    await fail_point(client, "failGetMoreAfterCursorCheckout", {"errorCode": 6, "namespace": "db.other"})
    await get_more(client, cid)
    await fail_point(client, "failGetMoreAfterCursorCheckout", {"errorCode": 6, "appName": "someone-else"})
    await get_more(client, cid)
    await client.admin({"configureFailPoint": "failGetMoreAfterCursorCheckout", "mode": "off"})


async def test_fail_command_on_change_stream_get_more_has_no_resumable_label(client):
    cid = await open_stream(client)
    await fail_point(client, "failCommand", {"failCommands": ["getMore"], "errorCode": 6, "closeConnection": False})
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.code == 6 and "errorLabels" not in info.value.reply
    await get_more(client, cid)  # failCommand fires before checkout: the cursor is still there


async def test_fail_command_labels_still_apply(client):
    # explicit errorLabels win; the aggregate opening a stream gets ResumableChangeStreamError
    cid = await open_stream(client)
    await fail_point(client, "failCommand", {"failCommands": ["getMore"], "errorCode": 50,
                                             "errorLabels": ["ResumableChangeStreamError"]})
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.labels == ["ResumableChangeStreamError"]
    await fail_point(client, "failCommand", {"failCommands": ["aggregate"], "errorCode": 6})
    with pytest.raises(CommandError) as info:
        await open_stream(client)
    assert info.value.labels == ["ResumableChangeStreamError"]
    await fail_point(client, "failCommand", {"failCommands": ["getMore"], "errorCode": 280})
    with pytest.raises(CommandError) as info:
        await get_more(client, cid)
    assert info.value.labels == ["NonResumableChangeStreamError"]
