"""The engine's RPC methods, by service: each module one part of the ``Engine`` facade."""
