"""The demo scenarios, one module per concept of the merge (see mongosim/demo/__init__.py)."""
