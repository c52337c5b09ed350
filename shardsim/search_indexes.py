"""Atlas Search index commands on a deployment without search: the server's refusal.

`createSearchIndexes`, `updateSearchIndex`, `dropSearchIndex` and
`listSearchIndexes` (and the `$listSearchIndexes`, `$search`, `$searchMeta`
and `$vectorSearch` stages) need a search index manager (`mongot`), which
only Atlas and AtlasCLI local deployments configure.  A community 8.0 mongod
or mongos parses the command (IDL: required fields and their types), then
fails with SearchNotEnabled (31082) before looking at the collection
(src/mongo/db/commands/search_index_commands.cpp,
throwIfNotRunningWithRemoteSearchIndexManagement); mongosim does the same.
"""

from __future__ import annotations

from typing import Any

from mongosim.oplog.errors import MongoError
from mongosim.shardsim.query.idl_errors import wrong_type
from mongosim.shardsim.query.search_stages import (  # noqa: F401 (re-exported)
    SEARCH_INDEX_COMMANDS_REFUSED,
    SEARCH_STAGES_REFUSED,
)


# command -> {field: (required, check, expected type)} of its IDL request (search_index_commands.idl)
_FIELDS: dict[str, dict[str, tuple[bool, Any, str]]] = {
    "createSearchIndexes": {"indexes": (True, lambda v: isinstance(v, list), "array")},
    "updateSearchIndex": {"id": (False, lambda v: isinstance(v, str), "string"),
                          "name": (False, lambda v: isinstance(v, str), "string"),
                          "definition": (True, lambda v: isinstance(v, dict), "object")},
    "dropSearchIndex": {"id": (False, lambda v: isinstance(v, str), "string"),
                        "name": (False, lambda v: isinstance(v, str), "string")},
    "listSearchIndexes": {"id": (False, lambda v: isinstance(v, str), "string"),
                          "name": (False, lambda v: isinstance(v, str), "string")},
}
SEARCH_INDEX_COMMANDS = tuple(_FIELDS)


def refuse_search_index_command(name: str, cmd: dict) -> dict:
    """Parse the command as the server's IDL does, then refuse it: SearchNotEnabled."""
    target = cmd.get(name)
    if not isinstance(target, str):
        raise wrong_type(f"{name}.{name}", target, "string")
    for field, (required, check, expected) in _FIELDS[name].items():
        if field not in cmd:
            if required:
                raise MongoError("IDLFailedToParse", f"BSON field '{name}.{field}' is missing but a required field")
        elif not check(cmd[field]):
            raise wrong_type(f"{name}.{field}", cmd[field], expected)
    raise MongoError("SearchNotEnabled", SEARCH_INDEX_COMMANDS_REFUSED)


def _register() -> None:
    from mongosim.shardsim.command_registry import command

    for name in SEARCH_INDEX_COMMANDS:
        command(name)(lambda node, ctx, _name=name: refuse_search_index_command(_name, ctx.cmd))


_register()
