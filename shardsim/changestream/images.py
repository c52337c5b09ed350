"""$_internalChangeStreamAddPreImage and $_internalChangeStreamAddPostImage.

Pre-images (`fullDocumentBeforeChange`: whenAvailable | required) come from the
node's pre-image store, written with every update/replace/delete of a
collection created or modified with `changeStreamPreAndPostImages: {enabled:
true}`, keyed by `{nsUUID, ts, applyOpsIndex}`.

Post-images (`fullDocument`): `updateLookup` reads the document's current
version by its documentKey (`lookup_single_document.py`: on a shard, on the
shard that owns it now; null if it is gone; with
matchCollectionUUIDForUpdateLookup, null if the collection is another
generation); `whenAvailable`/`required` apply the update's diff to the
stored pre-image.  `required` with no image is NoMatchingDocument (47).
"""

from __future__ import annotations

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.changestream.context import PAUSE, Stage
from mongosim.shardsim.lookup_single_document import lookup_single_document
from mongosim.shardsim.query.diff import apply_diff


def _missing_pre_image(ev) -> MongoError:
    return MongoError(
        "NoMatchingDocument",
        "Change stream was configured to require a pre-image for all update, delete and replace events, "
        f"but the pre-image was not found for event: {ev.doc.get('_id')}",
    )


class AddPreImage(Stage):
    name = "$_internalChangeStreamAddPreImage"
    bypassable = False  # (it adds the images)

    def get_next(self):
        ev = self.source.get_next()
        if ev is PAUSE or ev.pre_image_id is None or ev.op_type not in ("update", "replace", "delete"):
            return ev
        pre = self.ctx.node.preimages.get(ev.pre_image_id)
        if pre is None and self.ctx.spec.full_document_before_change == "required":
            raise _missing_pre_image(ev)
        ev.set_field("fullDocumentBeforeChange", pre)
        return ev


class AddPostImage(Stage):
    name = "$_internalChangeStreamAddPostImage"
    bypassable = False  # (it adds the images)

    def get_next(self):
        ev = self.source.get_next()
        if ev is PAUSE or ev.op_type != "update":
            return ev
        mode = self.ctx.spec.full_document
        if mode == "updateLookup":
            ev.set_field("fullDocument", self._lookup(ev))
            return ev
        pre = self.ctx.node.preimages.get(ev.pre_image_id) if ev.pre_image_id else None
        post = apply_diff(pre, ev.raw_update["diff"]) if (pre is not None and ev.raw_update) else None
        if post is None and mode == "required":
            raise MongoError(
                "NoMatchingDocument",
                "Change stream was configured to require a post-image for all update events, "
                f"but the post-image was not found for event: {ev.doc.get('_id')}",
            )
        ev.set_field("fullDocument", post)
        return ev

    def _lookup(self, ev):
        """lookupSingleDocument by the event's documentKey (on a shard: wherever the document lives now)."""
        ns = ev.doc["ns"]
        uuid = bytes(ev.uuid) if self.ctx.spec.match_collection_uuid_for_update_lookup and ev.uuid is not None else None
        return lookup_single_document(self.ctx.node, ns["db"], ns["coll"], ev.doc.get("documentKey") or {}, uuid)
