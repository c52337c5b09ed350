"""The log: cluster clock, oplog entries, the bounded per-node oplog and resume tokens.

The bottom layer of mongosim; it imports nothing from the layers above it
(mongosim -> router -> shardsim -> oplog).
"""
