"""The MongoDB wire protocol, sans-IO (bytes in, messages out; messages in, bytes out).

Modeled on h11: `WireConnection.receive_data(bytes)` buffers input,
`next_message()` returns the next parsed request (or NEED_DATA), and the
`encode_*` functions turn replies into bytes.  No sockets here; the trio
server in `router.server` moves the bytes.
"""

from mongosim.router.wire.messages import (  # noqa: F401
    NEED_DATA,
    OP_COMPRESSED,
    OP_MSG,
    OP_QUERY,
    OP_REPLY,
    FrameError,
    MsgRequest,
    QueryRequest,
    UnsupportedRequest,
    WireConnection,
    encode_op_msg,
    encode_op_msg_parts,
    encode_op_msg_raw,
    encode_op_reply,
    parse_message,
)
