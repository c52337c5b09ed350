"""The server version mongosim answers as (buildInfo, hello, explain's serverInfo)."""

SERVER_VERSION = "8.0.4"
GIT_VERSION = "mongosim"
