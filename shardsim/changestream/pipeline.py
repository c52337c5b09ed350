"""Building the stage list of a change stream, as the server expands `$changeStream`.

Replica set (and each shard of a sharded stream):

    oplog match -> unwind transaction -> transform -> [check invalidate]
    -> check resumability -> [classic-events filter] -> [add pre-image]
    -> [add post-image] -> [user stages] -> [split large event]
    -> [ensure resume token present]   (replica set only)

This is the order after the server's optimizer: DocumentSourceChangeStream::
buildPipeline places ensure-resume-token-present and the classic-events
`$match` after the image stages and before the user's stages, but a `$match`
may move ahead of every stage that allows it (the image stages and
ensure-resume-token-present do, for a filter on fields they leave alone), the
user's `$match`/`$project`-like stages move ahead of ensure-resume-token-present,
and $changeStreamSplitLargeEvent moves ahead of it too, so that it sees the
fragments it must find.

On a sharded cluster the shards run everything above except
ensure-resume-token-present, which runs in the router's merge part (after
$mergeCursors and handle-topology-change).
"""

from __future__ import annotations

from mongosim.shardsim.changestream.check_invalidate import CheckInvalidate
from mongosim.shardsim.changestream.check_resumability import CheckResumability, EnsureResumeTokenPresent
from mongosim.shardsim.changestream.context import ChangeStreamContext, Stage
from mongosim.shardsim.changestream.images import AddPostImage, AddPreImage
from mongosim.shardsim.changestream.oplog_match import OplogMatch
from mongosim.shardsim.changestream.spec import CLUSTER
from mongosim.shardsim.changestream.split_large_event import SplitLargeEvent
from mongosim.shardsim.changestream.transform import Transform
from mongosim.shardsim.changestream.unwind_transaction import UnwindTransaction
from mongosim.shardsim.changestream.user_stages import ClassicEventFilter, UserStages
from mongosim.oplog.resume_token import high_water_mark_data


def build_stages(ctx: ChangeStreamContext, user_stages: list[dict], split: bool) -> tuple[OplogMatch, Stage, list[Stage]]:
    """Return (the oplog source, the last stage, all stages in order)."""
    source = OplogMatch(ctx)
    stages: list[Stage] = [source]

    def add(stage: Stage) -> Stage:
        stages.append(stage)
        return stage

    top: Stage = add(UnwindTransaction(source, ctx))
    top = add(Transform(top, ctx))
    if ctx.level != CLUSTER:
        top = add(CheckInvalidate(top, ctx))
    client = ctx.client_token
    if client is None:
        client = high_water_mark_data(ctx.start_key_ts)  # (the start time's mark, as a client token)
    top = add(CheckResumability(top, ctx, client))
    if not ctx.spec.show_expanded_events:
        top = add(ClassicEventFilter(top, ctx))
    if ctx.spec.full_document_before_change != "off":
        top = add(AddPreImage(top, ctx))
    if ctx.spec.full_document != "default":
        top = add(AddPostImage(top, ctx))
    if user_stages:
        top = add(UserStages(top, ctx, user_stages))
    if split:
        top = add(SplitLargeEvent(top, ctx))
    if not ctx.needs_merge and ctx.client_token is not None and ctx.client_token.token_type != 0:
        top = add(EnsureResumeTokenPresent(top, ctx, ctx.client_token))
    return source, top, stages

